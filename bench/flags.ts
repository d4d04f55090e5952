// The flags of `npm run bench` (node:util parseArgs options), each with the line --help and
// bench/README.md show for it.
export const OPTIONS = {
  quick: { type: 'boolean', default: false },
  only: { type: 'string' },
  out: { type: 'string' },
  threads: { type: 'string', default: '2' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

export const FLAG_DOCS: Record<keyof typeof OPTIONS, { arg?: string; doc: string }> = {
  quick: {
    doc: 'smaller states, fewer rounds (what each section shrinks is listed with it); writes `…-quick.*` and leaves `latest.md` alone',
  },
  only: {
    arg: 'NAME[,NAME…]',
    doc: 'runs only these sections, in the order given; writes `…-only-<names joined by +>.*` and leaves `latest.md` alone',
  },
  out: { arg: 'DIR', doc: 'writes the result files to DIR instead of `bench/results/`' },
  threads: { arg: 'N', doc: 'onnxruntime intra-op threads for every session (default 2)' },
  help: { doc: 'this text' },
};
