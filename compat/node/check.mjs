// What the compat scripts share: a check that stops the run at the first
// failure, and the message of a rejected promise.
import { randomBytes } from 'node:crypto';

export function check(what, cond, detail = '') {
  if (!cond) {
    console.error(`FAIL: ${what} ${JSON.stringify(detail)}`);
    process.exit(1);
  }
  console.log(`ok   ${what}`);
}

// rejects is the message a promise was rejected with, or null if it was not.
export async function rejects(promise) {
  try {
    await promise;
  } catch (err) {
    return err.message;
  }
  return null;
}

// reqid draws a request id: 128 random bits as hex.
export const reqid = () => randomBytes(16).toString('hex');
