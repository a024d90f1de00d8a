// The TypeScript SDK's example of SPEC §8 as a user writes it on day one:
// make sdks installs the packed tarball into a fresh npm project with the
// newest node-redis and TypeScript, compiles this file with tsc --strict
// and runs it against a real server. It holds a chat's key while a
// stand-in model summarizes, saves the summary with the lease's fence, then
// shows the two errors a user handles: tryHold on a held key (NotHeldError)
// and a lease revoked while its function runs (LostError, with the store's
// reason).
//
//	node example.js redis://127.0.0.1:6379

import { createClient } from 'redis'
import { tenure, LostError, NotHeldError } from '@tenure-db/locks'

const url = process.argv[2]
if (url === undefined) throw new Error('usage: node example.js redis://host:port')
const redisClient = await createClient({ url }).connect()

// Stands in for the user's slow call, which stops when its signal aborts.
const model = {
	async summarize(messages: string[], opts: { signal: AbortSignal }): Promise<string> {
		await new Promise(resolve => setTimeout(resolve, 50))
		opts.signal.throwIfAborted()
		return messages.join(' / ')
	},
}
const chatId = 'chat-42'
const messages = ['hi', 'hello']
async function saveSummary(chatId: string, text: string, fence: bigint): Promise<void> {
	await redisClient.sendCommand(['SET', `summary:${chatId}`, text, 'FENCE', fence.toString()])
}

// The seed's example, as SPEC §8 has it.
const store = tenure(redisClient)            // a connected node-redis or ioredis client
const summaries = store.lock('summaries', { ttl: '30s' })   // ttl: '30s' or 30000 (ms)

await summaries.hold(chatId, async lease => {
	const text = await model.summarize(messages, { signal: lease.signal }) // aborted if the lease is lost
	await saveSummary(chatId, text, lease.fence)
})

const saved = await redisClient.get(`summary:${chatId}`)
if (saved !== 'hi / hello') throw new Error(`summary:${chatId} is ${String(saved)}`)
console.log('ts: held, saved with the fence:', saved)

// tryHold on a key this process holds: NotHeldError, the function not run.
await summaries.hold(chatId, async () => {
	try {
		await summaries.tryHold(chatId, () => { throw new Error('ran on a held key') })
		throw new Error('tryHold on a held key resolved')
	} catch (err) {
		if (!(err instanceof NotHeldError)) throw err
		console.log('ts: tryHold on a held key:', err.message)
	}
})

// An admin's revoke aborts lease.signal; hold rejects with LostError even
// though the function resolved.
try {
	await summaries.hold(chatId, async lease => {
		await redisClient.sendCommand(['LOCK.REVOKE', 'summaries', chatId])
		await new Promise<void>((resolve, reject) => {
			lease.signal.addEventListener('abort', () => resolve())
			setTimeout(() => reject(new Error('not aborted after the revoke')), 20_000).unref()
		})
	})
	throw new Error('hold resolved after a revoke')
} catch (err) {
	if (!(err instanceof LostError) || err.reason !== 'revoked by admin') throw err
	console.log('ts: revoked while held:', err.message)
}

await redisClient.close()
