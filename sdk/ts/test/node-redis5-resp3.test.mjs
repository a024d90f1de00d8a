import { suite } from './suite.mjs';

suite('node-redis 5 (RESP3)');
