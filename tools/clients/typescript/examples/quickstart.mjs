// grove in this process (the native addon, no server): a session, two appends, a branch, the
// context. `node quickstart.mjs [STORE_DIR]` (default ./grove-store, made when missing).
import { openStore } from "@grove/client";

const client = openStore(process.argv[2] ?? "grove-store");
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
	console.log(`session ${session.id}: ${context.messages.length} messages in the context (${client.where})`);
	for (const message of context.messages) console.log(`  ${message.role}`);
} finally {
	client.close();
}
