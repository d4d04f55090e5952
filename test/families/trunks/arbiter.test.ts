// Arbiter's 24 fixed slots (last_pos → scores; on Gemma 3 its padding mask from last_pos, as published) on the real-trunk replicas (Qwen3 attention-only, Qwen3.5 hybrid, Gemma 3 sliding
// window; tools/trunks/), held to the family's contract, to each torch module and to the goldens of
// the independent references: trunk-helpers.ts says what and why.
import { describeTrunkFamily } from './trunk-helpers.js';

describeTrunkFamily('arbiter');
