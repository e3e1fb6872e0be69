/**
 * GroveSession (src/openai-agents.ts) under the OpenAI Agents SDK (`@openai/agents`): a real
 * `Runner` loop with a scripted model and a tool keeps its history on grove; every operation of
 * the `Session` interface gives what the SDK's own `MemorySession` gives; branches persist
 * across session objects. On the run's server, or in this process (GROVE_TRANSPORT=in-process).
 */
import { randomUUID } from "node:crypto";
import {
	Agent,
	type AgentInputItem,
	MemorySession,
	type Model,
	type ModelRequest,
	type ModelResponse,
	Runner,
	setTracingDisabled,
	tool,
	Usage,
} from "@openai/agents";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { GroveSession, ITEM, sessionOf } from "../src/openai-agents.js";
import { testClient } from "./clients.js";

setTracingDisabled(true);

const client = testClient("openai-agents-test");
afterAll(() => client.close());

/** Answers each call with the next output of its script; keeps the input it was given. */
class ScriptedModel implements Model {
	readonly inputs: unknown[] = [];
	constructor(private readonly script: ModelResponse["output"][]) {}

	async getResponse(request: ModelRequest): Promise<ModelResponse> {
		this.inputs.push(JSON.parse(JSON.stringify(request.input)));
		const output = this.script.shift();
		if (output === undefined) throw new Error("the script is over");
		return { output, usage: new Usage(), responseId: undefined };
	}

	async *getStreamedResponse(): AsyncIterable<never> {
		throw new Error("not streamed");
	}
}

function say(text: string): ModelResponse["output"][number] {
	return {
		type: "message",
		id: `msg_${randomUUID().slice(0, 8)}`,
		role: "assistant",
		status: "completed",
		content: [{ type: "output_text", text }],
	};
}

function call(name: string, args: Record<string, unknown>): ModelResponse["output"][number] {
	return { type: "function_call", id: `fc_${randomUUID().slice(0, 8)}`, callId: `call_${randomUUID().slice(0, 8)}`, name, arguments: JSON.stringify(args) };
}

const weather = tool({
	name: "weather",
	description: "The weather in a city.",
	parameters: z.object({ city: z.string() }),
	execute: async ({ city }) => `sunny in ${city}`,
});

function user(text: string): AgentInputItem {
	return { role: "user", content: text } as AgentInputItem;
}

function assistant(text: string): AgentInputItem {
	return { role: "assistant", status: "completed", content: [{ type: "output_text", text }] } as AgentInputItem;
}

function texts(items: AgentInputItem[]): string[] {
	return items.map((item) => {
		const content = (item as { content?: unknown }).content;
		if (typeof content === "string") return content;
		return (content as { text: string }[]).map((part) => part.text).join("");
	});
}

describe("GroveSession", () => {
	it("keeps a Runner's history on grove", async () => {
		const sid = `run-${randomUUID().slice(0, 8)}`;
		const model = new ScriptedModel([[call("weather", { city: "Oslo" })], [say("It is sunny in Oslo.")], [say("You asked about Oslo.")]]);
		const agent = new Agent({ name: "helper", instructions: "Be brief.", model, tools: [weather] });
		const runner = new Runner();
		const session = new GroveSession(sid, client);
		const first = await runner.run(agent, "Weather in Oslo?", { session });
		expect(first.finalOutput).toBe("It is sunny in Oslo.");
		const second = await runner.run(agent, "What did I ask?", { session });
		expect(second.finalOutput).toBe("You asked about Oslo.");
		// The third model call saw the first turn, read back from grove.
		const seen = model.inputs[2] as { type?: string; role?: string; content?: unknown; output?: unknown }[];
		expect(seen.map((item) => item.type ?? "message")).toEqual(["message", "function_call", "function_call_result", "message", "message"]);
		expect(seen[0]?.content).toBe("Weather in Oslo?");
		// A new object (as a new process makes) reads the same history, and the entries are grove's.
		const again = new GroveSession(sid, client);
		expect(await again.getItems()).toEqual(await session.getItems());
		expect((await again.getItems()).length).toBe(6);
		const entries = await client.path(sessionOf(sid));
		expect(entries.map((entry) => entry.customType)).toEqual(Array(6).fill(ITEM));
	});

	it("agrees with the SDK's MemorySession on every operation", async () => {
		const grove = new GroveSession(`diff-${randomUUID().slice(0, 8)}`, client);
		const memory = new MemorySession();
		type Step = ["get", number | undefined] | ["add", AgentInputItem[]] | ["pop"] | ["clear"];
		const steps: Step[] = [
			["get", undefined],
			["pop"],
			["add", [user("a"), assistant("b")]],
			["add", []],
			["add", [user("c ü 😀"), { type: "function_call", callId: "x", name: "f", arguments: "{}" } as AgentInputItem]],
			["get", 1],
			["get", 3],
			["get", 99],
			["pop"],
			["get", undefined],
			["add", [{ type: "function_call_result", callId: "x", name: "f", status: "completed", output: { type: "text", text: "1" } } as AgentInputItem]],
			["pop"],
			["pop"],
			["get", undefined],
			["clear"],
			["get", undefined],
			["pop"],
			["add", [user("after clear")]],
			["get", undefined],
		];
		for (const step of steps) {
			if (step[0] === "get") expect(await grove.getItems(step[1])).toEqual(await memory.getItems(step[1]));
			else if (step[0] === "add") {
				await grove.addItems(step[1]);
				await memory.addItems(step[1]);
			} else if (step[0] === "pop") expect(await grove.popItem()).toEqual(await memory.popItem());
			else {
				await grove.clearSession();
				await memory.clearSession();
			}
		}
	});

	it("keeps branches that persist and switch", async () => {
		const sid = `branch-${randomUUID().slice(0, 8)}`;
		const session = new GroveSession(sid, client);
		expect(await session.listBranches()).toEqual([{ branchId: "main", tip: null, isCurrent: true, messageCount: 0, userTurns: 0 }]);
		await session.addItems([user("q1"), assistant("a1"), user("q2"), assistant("a2")]);
		expect(await session.createBranchFromTurn(2, "retry")).toBe("retry");
		expect(await session.currentBranchId()).toBe("retry");
		expect(texts(await session.getItems())).toEqual(["q1", "a1"]);
		await session.addItems([user("q2 again"), assistant("a2'")]);
		await expect(session.createBranchFromTurn(1, "main")).rejects.toThrow(/exists already/);
		await expect(session.createBranchFromTurn(5)).rejects.toThrow(/no user turn 5/);
		await expect(session.switchToBranch("nope")).rejects.toThrow(/no branch "nope"/);
		await session.switchToBranch("main");
		expect(texts(await session.getItems())).toEqual(["q1", "a1", "q2", "a2"]);

		const again = new GroveSession(sid, client);
		const listed = await again.listBranches();
		expect(listed.map((b) => [b.branchId, b.isCurrent, b.messageCount, b.userTurns])).toEqual([
			["main", true, 4, 2],
			["retry", false, 4, 2],
		]);
		await again.switchToBranch("retry");
		expect(texts(await again.getItems())).toEqual(["q1", "a1", "q2 again", "a2'"]);
		expect(await again.popItem()).toEqual(assistant("a2'"));
		const named = await again.createBranchFromContent("q2 again");
		expect(named).toMatch(/^branch_from_turn_2_/);
		expect(texts(await again.getItems())).toEqual(["q1", "a1"]);
		await again.clearSession();
		expect(await again.getItems()).toEqual([]);
		expect((await again.listBranches()).map((b) => b.branchId)).toEqual(["main"]);
		// Nothing was deleted.
		expect((await client.tree(sessionOf(sid))).nodes).toHaveLength(6);
	});

	it("names any SDK session id", async () => {
		expect(sessionOf("user:42/é")).toBe(`oa-${Buffer.from("user:42/é").toString("hex")}`);
		const long = "x".repeat(200);
		expect(sessionOf(long)).toMatch(/^oa\.[0-9a-f]{64}$/);
		const session = new GroveSession(long, client);
		await session.addItems([user("long")]);
		expect(await session.getItems()).toEqual([user("long")]);
	});
});
