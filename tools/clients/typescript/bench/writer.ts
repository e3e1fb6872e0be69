/**
 * One writer process of the throughput benchmark: `node writer.js URL APPENDS MODE SESSION...`.
 * It connects, prints `ready`, waits for a line on stdin, then appends APPENDS user messages
 * of about 450 bytes (the payload of the Rust `writers` benchmark), the i-th to SESSION[i % n],
 * and prints `done CPU_MICROSECONDS` (its whole CPU time, user and system). MODE `one`: one
 * append at a time, with `GroveClient.append`. MODE `sessions`: each session has its own
 * sequence of appends (one in flight per session, as an agent loop awaits each), all sessions
 * at once, through one `AppendBatcher`, which sends what is pending as one request.
 */
import { createInterface } from "node:readline";
import { AppendBatcher } from "../src/batcher.js";
import { GroveClient } from "../src/client.js";

const [url, appendsArg, mode, ...sessions] = process.argv.slice(2);
if (!url || !appendsArg || (mode !== "one" && mode !== "sessions") || sessions.length === 0) {
	throw new Error("usage: writer.js URL APPENDS one|sessions SESSION...");
}
const client = new GroveClient({ url, token: process.env.GROVE_TOKEN || undefined });
const appends = Number(appendsArg);
const filler = "x".repeat(400);

await client.health();
process.stdout.write("ready\n");
await new Promise<void>((go) => createInterface({ input: process.stdin }).once("line", () => go()));
const message = (i: number) => ({ role: "user", content: [{ type: "text", text: `message ${i} ${filler}` }], timestamp: i });
if (mode === "one") {
	for (let i = 0; i < appends; i++) await client.append(sessions[i % sessions.length]!, message(i));
} else {
	const batcher = new AppendBatcher(client);
	await Promise.all(
		sessions.map(async (sid, k) => {
			for (let i = k; i < appends; i += sessions.length) await batcher.append(sid, message(i));
		}),
	);
}
client.close();
const cpu = process.cpuUsage();
process.stdout.write(`done ${cpu.user + cpu.system}\n`);
process.exit(0);
