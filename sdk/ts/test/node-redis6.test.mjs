import { suite } from './suite.mjs';

suite('node-redis 6 (RESP2)');
