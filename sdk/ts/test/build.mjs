// Builds the server of this repository (cmd/tenure) once, into .build/,
// before the tests start it: npm test runs this first (pretest).
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..', '..');
mkdirSync(join(here, '..', '.build'), { recursive: true });
execFileSync(process.env.GO ?? 'go', ['build', '-o', join(here, '..', '.build', 'tenure'), './cmd/tenure'],
  { cwd: root, stdio: 'inherit' });
