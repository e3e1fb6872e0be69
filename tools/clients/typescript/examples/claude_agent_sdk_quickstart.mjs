// The Claude Agent SDK's session store on grove, in this process: a transcript is appended as the
// SDK mirrors one from Claude Code, then read, forked at its first answer and listed with the
// SDK's own helpers. `node claude_agent_sdk_quickstart.mjs [STORE_DIR]` (default ./grove-store);
// needs `@anthropic-ai/claude-agent-sdk`. No Claude Code process or API key is needed here; with
// one, pass the store to `query()` as `options: { sessionStore: store }`.
import { randomUUID } from "node:crypto";
import { forkSession, getSessionMessages, listSessions } from "@anthropic-ai/claude-agent-sdk";
import { openStore } from "@grove/client";
import { GroveSessionStore } from "@grove/client/claude-agent-sdk";

/** A user message and the assistant's answer, as Claude Code writes them. */
function turn(sessionId, question, answer, parentUuid) {
	const [asked, answered] = [randomUUID(), randomUUID()];
	const common = { sessionId, isSidechain: false, timestamp: "2026-12-01T10:00:00.000Z" };
	return [
		{ type: "user", uuid: asked, parentUuid, ...common, message: { role: "user", content: question } },
		{ type: "assistant", uuid: answered, parentUuid: asked, ...common, message: { role: "assistant", content: [{ type: "text", text: answer }] } },
	];
}

const client = openStore(process.argv[2] ?? "grove-store");
try {
	const sessionStore = new GroveSessionStore(client);
	const dir = "/work/project";
	const sid = randomUUID();
	// The SDK names a project by its directory: ask it for the key, as a store sees it.
	let projectKey = "";
	await listSessions({ dir, sessionStore: { append: async () => {}, load: async () => null, listSessions: async (key) => ((projectKey = key), []) } });
	const first = turn(sid, "What is a tree?", "Nodes and edges, no cycles.", null);
	await sessionStore.append({ projectKey, sessionId: sid }, first);
	await sessionStore.append({ projectKey, sessionId: sid }, turn(sid, "And a branch?", "A path from a leaf.", first[1].uuid));
	const messages = await getSessionMessages(sid, { dir, sessionStore });
	const fork = await forkSession(sid, { dir, sessionStore, upToMessageId: first[1].uuid });
	const forked = await getSessionMessages(fork.sessionId, { dir, sessionStore });
	const sessions = await listSessions({ dir, sessionStore });
	console.log(`claude session: ${messages.length} messages, fork: ${forked.length} messages, ${sessions.length} sessions listed`);
} finally {
	client.close();
}
