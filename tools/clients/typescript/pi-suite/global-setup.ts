/**
 * One grove server for pi's suite; the drop-ins find it through GROVE_URL, which the workers
 * inherit. At the end it says how many grove sessions pi's tests made (0 would mean the
 * redirect did not happen).
 */
import { join } from "node:path";
import { GroveClient } from "../src/client.js";
import { startServer } from "../test/server.js";

export default async function setup(): Promise<() => Promise<void>> {
	// pi's suite replaces an in-memory storage: what it tests is behaviour, not durability, and a
	// flush per append (milliseconds on this disk) is more than some of its tests allow between
	// two timer ticks. The writes still go through grove's whole write path, only unflushed.
	const server = await startServer({
		args: (store) => ["--socket", join(store, "grove.sock"), "--durability", "none"],
	});
	process.env.GROVE_URL = server.urls[0]!;
	return async () => {
		const client = new GroveClient({ url: server.urls[0]! });
		try {
			const sessions = await client.allSessions();
			const report = await client.verify();
			console.log(`grove: pi's suite made ${sessions.length} sessions; verify ok: ${report.ok}`);
		} finally {
			client.close();
			await server.stop();
		}
	};
}
