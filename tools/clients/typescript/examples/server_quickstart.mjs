// grove from node through `grove serve`: a session, two appends, a branch, the context.
// Run it with a server up: `grove serve --store /tmp/grove --socket /tmp/grove/grove.sock`,
// then `node server_quickstart.mjs` (GROVE_URL, if set, names another server).
import { GroveClient } from "@grove/client";

const client = new GroveClient({ url: process.env.GROVE_URL ?? "unix:/tmp/grove/grove.sock" });
try {
	const session = await client.createSession({ cwd: process.cwd() });
	const question = await client.append(session.id, { role: "user", content: "What is 2 + 2?", timestamp: Date.now() });
	await client.append(session.id, {
		role: "assistant",
		content: [{ type: "text", text: "4" }],
		provider: "example",
		model: "example-1",
		usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
		stopReason: "stop",
		timestamp: Date.now(),
	});
	// Go back to the question and ask again: a sibling branch, nothing overwritten.
	await client.setLeaf(session.id, question);
	await client.append(session.id, { role: "user", content: "And 3 + 3?", timestamp: Date.now() });
	const context = await client.context(session.id);
	console.log(`session ${session.id}: ${context.messages.length} messages in the context`);
	for (const message of context.messages) console.log(`  ${message.role}`);
} finally {
	client.close();
}
