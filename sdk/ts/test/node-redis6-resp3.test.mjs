import { speaksResp3 } from './harness.mjs';
import { suite } from './suite.mjs';

// Until the server speaks RESP3 (HELLO 3), these are skipped, and say so.
suite('node-redis 6 (its default, RESP3)', { skip: (await speaksResp3()) ? false : 'the server answers HELLO 3 with -NOPROTO' });
