import { kinds } from './kinds.mjs';
import { suite } from './suite.mjs';

suite('node-redis 6 (RESP2)');
kinds('node-redis 6 (RESP2)');
