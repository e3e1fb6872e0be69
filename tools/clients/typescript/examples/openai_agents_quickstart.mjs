// An OpenAI Agents SDK agent whose session memory is grove, in this process: two turns, then a
// branch from before the second question and another question there; grove keeps both branches.
// `node openai_agents_quickstart.mjs [STORE_DIR]` (default ./grove-store); needs `@openai/agents`.
// The model is a stand-in that needs no network: use a real one (`model: "gpt-5-mini"`) and
// nothing else changes.
import { Agent, Runner, Usage, setTracingDisabled } from "@openai/agents";
import { openStore } from "@grove/client";
import { GroveSession } from "@grove/client/openai-agents";

/** A stand-in for a model: it answers the last question by its length. */
const counter = {
	async getResponse(request) {
		const text = `${request.input.at(-1).content.length} characters`;
		const output = [{ type: "message", id: "msg", role: "assistant", status: "completed", content: [{ type: "output_text", text }] }];
		return { output, usage: new Usage(), responseId: undefined };
	},
	async *getStreamedResponse() {
		throw new Error("not streamed");
	},
};

setTracingDisabled(true);
const client = openStore(process.argv[2] ?? "grove-store");
try {
	const agent = new Agent({ name: "helper", instructions: "Be brief.", model: counter });
	const session = new GroveSession("quickstart", client);
	const runner = new Runner();
	await runner.run(agent, "What is a tree?", { session });
	await runner.run(agent, "And a branch?", { session });
	await session.createBranchFromTurn(2); // back to before the second question
	const result = await runner.run(agent, "And a leaf?", { session });
	const items = await session.getItems();
	const branches = (await session.listBranches()).length;
	console.log(`session quickstart: ${items.length} items, ${branches} branches, last answer: '${result.finalOutput}'`);
} finally {
	client.close();
}
