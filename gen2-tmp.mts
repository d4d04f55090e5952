import { ensureNliReplicaShape } from './tools/families/nli-replica.ts';
console.log(ensureNliReplicaShape('deberta-v3-large', ['fp32', 'int8'], { log: console.log }));
