/**
 * One writer process of the throughput benchmark: `node writer.js URL APPENDS SESSION...`.
 * It connects, prints `ready`, waits for a line on stdin, then appends APPENDS user messages
 * of about 450 bytes (the payload of the Rust `writers` benchmark), the i-th to SESSION[i % n],
 * one at a time, and prints `done CPU_MICROSECONDS` (its whole CPU time, user and system).
 */
import { createInterface } from "node:readline";
import { GroveClient } from "../src/client.js";

const [url, appendsArg, ...sessions] = process.argv.slice(2);
if (!url || !appendsArg || sessions.length === 0) throw new Error("usage: writer.js URL APPENDS SESSION...");
const client = new GroveClient({ url, token: process.env.GROVE_TOKEN || undefined });
const appends = Number(appendsArg);
const filler = "x".repeat(400);

await client.health();
process.stdout.write("ready\n");
await new Promise<void>((go) => createInterface({ input: process.stdin }).once("line", () => go()));
for (let i = 0; i < appends; i++) {
	await client.append(sessions[i % sessions.length]!, {
		role: "user",
		content: [{ type: "text", text: `message ${i} ${filler}` }],
		timestamp: i,
	});
}
client.close();
const cpu = process.cpuUsage();
process.stdout.write(`done ${cpu.user + cpu.system}\n`);
process.exit(0);
