import { suite } from './suite.mjs';

suite('ioredis 5');
