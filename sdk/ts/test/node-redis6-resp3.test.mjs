import { kinds } from './kinds.mjs';
import { suite } from './suite.mjs';

suite('node-redis 6 (its default, RESP3)');
kinds('node-redis 6 (its default, RESP3)');
