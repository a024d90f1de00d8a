import { kinds } from './kinds.mjs';
import { suite } from './suite.mjs';

suite('node-redis 5 (RESP3)');
kinds('node-redis 5 (RESP3)');
