import { suite } from './suite.mjs';

suite('node-redis 6 (its default, RESP3)');
