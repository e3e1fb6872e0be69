/**
 * One grove server for pi's suite; the drop-ins find it through GROVE_URL, which the workers
 * inherit. At the end it says how many grove sessions pi's tests made (0 would mean the
 * redirect did not happen). With GROVE_TRANSPORT=in-process, no server: each worker process
 * opens a store of its own in this run's folder (`in-process:DIR/PID`, pi-compat/client.ts),
 * and the end counts the sessions of every one.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GroveClient } from "../src/client.js";
import { openStore } from "../src/native.js";
import { startServer } from "../test/server.js";

export default async function setup(): Promise<() => Promise<void>> {
	if (process.env.GROVE_TRANSPORT === "in-process") {
		const dir = mkdtempSync(join(tmpdir(), "grove-pi-suite-"));
		process.env.GROVE_URL = `in-process:${dir}`;
		process.env.GROVE_STORE_PER_PROCESS = "1";
		// As the server below: behaviour, not durability, is what pi's suite tests.
		process.env.GROVE_DURABILITY = "none";
		return async () => {
			let sessions = 0;
			let ok = true;
			for (const name of readdirSync(dir)) {
				const client = openStore(join(dir, name), { fallback: "error" });
				sessions += (await client.allSessions()).length;
				ok &&= (await client.verify()).ok;
				client.close();
			}
			console.log(`grove (in-process): pi's suite made ${sessions} sessions; verify ok: ${ok}`);
			rmSync(dir, { recursive: true, force: true });
		};
	}
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
