// A request's tokenizer for the families' layouts: each distinct text is encoded once per request
// (the state, read in every row of an encoder, is tokenized once for all the request's questions).

/** `encode` with each distinct text encoded once. */
export function encodeOnce(encode: (text: string) => number[]): (text: string) => number[] {
  const memo = new Map<string, number[]>();
  return (text) => {
    let ids = memo.get(text);
    if (!ids) memo.set(text, (ids = encode(text)));
    return ids;
  };
}
