// What a command writes to process.stderr while it runs in-process (commands that take no io option).
export async function withStderr<T>(fn: () => Promise<T>): Promise<{ result: T; err: string }> {
  const chunks: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array) => {
    chunks.push(String(chunk));
    return true;
  }) as typeof process.stderr.write;
  try {
    return { result: await fn(), err: chunks.join('') };
  } finally {
    process.stderr.write = write;
  }
}
