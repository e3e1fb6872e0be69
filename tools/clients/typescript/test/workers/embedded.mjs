/**
 * A process embedding a store: `node embedded.mjs DIR SESSION` opens the store at DIR with the
 * native addon (sync durability), prints `open` once it holds it, then appends user messages
 * to SESSION one after another, each with an id of its own, and prints `{"id"}` per
 * acknowledged append, until it is killed.
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const [dir, sid] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const { NativeStore } = require(fileURLToPath(new URL("../../native/index.cjs", import.meta.url)));
const store = NativeStore.open(dir, { durability: "sync" });
process.stdout.write("open\n");
const headers = ["content-type", "application/json"];
for (let i = 0; ; i++) {
	const id = `p${process.pid}-${i}`;
	const body = Buffer.from(JSON.stringify({ entry: { role: "user", content: `append ${i}` }, id }));
	const reply = await store.request("POST", `/v1/sessions/${sid}/entries`, headers, body);
	if (reply.status !== 201) {
		process.stderr.write(`append ${i}: ${reply.status} ${reply.takeFirst()?.toString()}\n`);
		process.exit(1);
	}
	process.stdout.write(`${JSON.stringify({ id })}\n`);
}
