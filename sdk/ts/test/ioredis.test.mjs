import { kinds } from './kinds.mjs';
import { suite } from './suite.mjs';

suite('ioredis 5');
kinds('ioredis 5');
