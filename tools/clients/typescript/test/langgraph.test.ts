/**
 * GroveSaver (src/langgraph.ts) against a real `grove serve` of its own: LangGraph's own
 * checkpointer validation suite (`@langchain/langgraph-checkpoint-validation`, every test, plus
 * its opt-in `getDeltaChannelHistory` tests), then what docs/langgraph.md promises on the grove
 * side: a thread is a normal session (verify, tree), time travel branches it, the leaf is the
 * latest checkpoint, and a read costs a handful of requests; last, a real LangGraph graph on it.
 */
import {
	type Checkpoint,
	type CheckpointMetadata,
	ERROR,
	emptyCheckpoint,
	uuid6,
} from "@langchain/langgraph-checkpoint";
import {
	type CheckpointSaverTestInitializer,
	deltaChannelHistoryTests,
	validate,
} from "@langchain/langgraph-checkpoint-validation";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { GroveClient } from "../src/client.js";
import { GroveSaver, sessionIdOf, threadOfSessionId } from "../src/langgraph.js";
import type { WireEntry } from "../src/types.js";
import { inProcess, testClient } from "./clients.js";
import { type RunningServer, startServer } from "./server.js";

// The validation suite calls the test functions as globals (its CLI runs vitest with `globals`).
Object.assign(globalThis, { describe, it, expect, beforeAll, afterAll, beforeEach, afterEach });

let server: RunningServer | undefined;
let admin: GroveClient | undefined;

function url(): string {
	if (server === undefined) throw new Error("the server has not started");
	return server.urls[0]!;
}

/** A new client of this file's store: its server's, or the in-process one (GROVE_TRANSPORT=in-process). */
function fresh(): GroveClient {
	return inProcess ? testClient() : new GroveClient({ url: url() });
}

function grove(): GroveClient {
	if (admin === undefined) throw new Error("the server has not started");
	return admin;
}

/** Every session of this file's own server is removed: savers are isolated as the suite asks. */
async function wipe(): Promise<void> {
	for (const session of await grove().allSessions()) await grove().deleteSession(session.id);
}

const initializer: CheckpointSaverTestInitializer<GroveSaver> = {
	checkpointerName: "@grove/client GroveSaver",
	beforeAllTimeout: 600_000,
	async beforeAll() {
		if (!inProcess) server = await startServer();
		admin = fresh();
	},
	async afterAll() {
		admin?.close();
		const code = server ? await server.stop() : 0;
		if (code !== 0) throw new Error(`grove serve exited with ${code} after SIGTERM`);
	},
	async createCheckpointer() {
		await wipe();
		return inProcess ? new GroveSaver({ client: fresh() }) : new GroveSaver({ url: url() });
	},
	async destroyCheckpointer(saver) {
		saver.close();
		await wipe();
	},
};

validate(initializer);
deltaChannelHistoryTests(initializer);

const metadata: CheckpointMetadata = { source: "loop", step: 0, parents: {} };

function checkpoint(id: string, values: Record<string, unknown>, versions: Record<string, number>): Checkpoint {
	return { ...emptyCheckpoint(), id, channel_values: values, channel_versions: versions };
}

function configOf(threadId: string, checkpointId?: string) {
	return { configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: checkpointId } };
}

describe("GroveSaver on grove", () => {
	let saver: GroveSaver;
	beforeEach(async () => {
		saver = await initializer.createCheckpointer();
	});
	afterEach(async () => {
		await initializer.destroyCheckpointer?.(saver);
	});

	it("takes the server's address as the client does, GROVE_URL and GROVE_TOKEN by default", () => {
		vi.stubEnv("GROVE_URL", "");
		expect(() => new GroveSaver()).toThrow(/GROVE_URL/);
		vi.stubEnv("GROVE_URL", "unix:/tmp/grove-test.sock");
		expect(new GroveSaver().client.endpoint).toEqual({ socketPath: "/tmp/grove-test.sock" });
		vi.unstubAllEnvs();
		expect(new GroveSaver({ url: "http://127.0.0.1:7070", token: "t" }).client.endpoint).toEqual({ host: "127.0.0.1", port: 7070 });
		expect(() => new GroveSaver({ url: "https://example.com" })).toThrow(TypeError);
	});

	/** Three checkpoints in a chain, `count` changing on each, `doc` only on the first; writes on the last. */
	async function chain(threadId: string): Promise<string[]> {
		const ids = [uuid6(-1), uuid6(-1), uuid6(-1)];
		let config = configOf(threadId);
		for (const [step, id] of ids.entries()) {
			const values = { doc: "a long document", count: step };
			const changed: Record<string, number> = step === 0 ? { doc: 1, count: 1 } : { count: step + 1 };
			config = (await saver.put(config, checkpoint(id, values, { doc: 1, count: step + 1 }), { ...metadata, step }, changed)) as typeof config;
		}
		await saver.putWrites(config, [["count", 7]], "task-1", "~path");
		return ids;
	}

	it("maps a thread onto a session that grove verifies, with the checkpoints as a tree", async () => {
		const threadId = "thread é/1";
		const ids = await chain(threadId);
		const sid = sessionIdOf(threadId, "");
		expect(sid).toBe(`lg-${Buffer.from(threadId).toString("hex")}-n`);
		expect(threadOfSessionId(sid)).toEqual({ threadId, checkpointNs: "" });
		const session = await grove().getSession(sid);
		expect(session.metadata).toEqual({ langgraph: { thread_id: threadId, checkpoint_ns: "" } });

		const report = await grove().verify();
		expect(report.problems).toEqual([]);
		expect(report.ok).toBe(true);

		const tree = await grove().tree(sid);
		const nodes = new Map(tree.nodes.map((node) => [node.id, node]));
		expect(tree.nodes.map((node) => node.type)).toEqual(["custom", "custom", "custom", "custom"]);
		expect(nodes.get(ids[0]!)?.parentId).toBeNull();
		expect(nodes.get(ids[1]!)?.parentId).toBe(ids[0]);
		expect(nodes.get(ids[2]!)?.parentId).toBe(ids[1]);
		const writes = tree.nodes.find((node) => !ids.includes(node.id));
		expect(writes?.id).toMatch(new RegExp(`^${ids[2]}~w[0-9a-f]{12}$`));
		expect(writes?.parentId).toBe(ids[2]);
		expect(session.leaf).toBe(ids[2]);

		// The index: `doc` is held by the first checkpoint, `count` by each; `blobs` only what changed.
		const last = (await grove().getEntry(sid, ids[2]!)) as WireEntry & { data: Record<string, unknown> };
		expect(last.customType).toBe("langgraph.checkpoint");
		expect(last.data.parent).toBe(ids[1]);
		expect(last.data.channels).toEqual({ doc: ["1", ids[0]], count: ["3", ids[2]] });
		expect(Object.keys(last.data.blobs as object)).toEqual(["count"]);

		const latest = await saver.getTuple({ configurable: { thread_id: threadId } });
		expect(latest?.config.configurable?.checkpoint_id).toBe(ids[2]);
		expect(latest?.checkpoint.channel_values).toEqual({ doc: "a long document", count: 2 });
		expect(latest?.pendingWrites).toEqual([["task-1", "count", 7]]);
		expect(latest?.parentConfig?.configurable?.checkpoint_id).toBe(ids[1]);
	});

	it("branches the session on time travel, and the newest checkpoint stays the latest", async () => {
		const threadId = "travel";
		const ids = await chain(threadId);
		const sid = sessionIdOf(threadId, "");
		const fork = uuid6(-1);
		const forked = await saver.put(configOf(threadId, ids[0]), checkpoint(fork, { doc: "a long document", count: 10 }, { doc: 1, count: 11 }), { ...metadata, source: "fork", step: 1 }, { count: 11 });
		expect(forked.configurable?.checkpoint_id).toBe(fork);

		const tree = await grove().tree(sid);
		const byId = new Map(tree.nodes.map((node) => [node.id, node]));
		const root = byId.get(ids[0]!)!;
		expect(root.children.map((index) => tree.nodes[index]!.id).sort()).toEqual([ids[1], fork].sort());
		expect(byId.get(fork)?.parentId).toBe(ids[0]);
		expect(byId.get(fork)?.onActivePath).toBe(true);
		expect(byId.get(ids[2]!)?.onActivePath).toBe(false);

		const latest = await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "" } });
		expect(latest?.config.configurable?.checkpoint_id).toBe(fork);
		expect(latest?.parentConfig?.configurable?.checkpoint_id).toBe(ids[0]);
		expect(latest?.checkpoint.channel_values).toEqual({ doc: "a long document", count: 10 });
		expect(latest?.pendingWrites).toEqual([]);

		// The old branch is intact.
		const old = await saver.getTuple(configOf(threadId, ids[2]));
		expect(old?.checkpoint.channel_values).toEqual({ doc: "a long document", count: 2 });
		expect(old?.pendingWrites).toEqual([["task-1", "count", 7]]);

		const listed = [];
		for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) listed.push(tuple.checkpoint.id);
		expect(listed).toEqual([fork, ids[2], ids[1], ids[0]]);
		const forks = [];
		for await (const tuple of saver.list({ configurable: { thread_id: threadId } }, { filter: { source: "fork" } })) forks.push(tuple.checkpoint.id);
		expect(forks).toEqual([fork]);
		expect((await grove().verify()).ok).toBe(true);
	});

	it("keeps the leaf on the latest checkpoint when an older one or any writes come later", async () => {
		const threadId = "late";
		const older = uuid6(-1);
		const newer = uuid6(-1);
		const sid = sessionIdOf(threadId, "");
		await saver.put(configOf(threadId), checkpoint(newer, { x: 2 }, { x: 2 }), metadata, { x: 2 });
		await saver.put(configOf(threadId), checkpoint(older, { x: 1 }, { x: 1 }), metadata, { x: 1 });
		expect(await grove().leaf(sid)).toBe(newer);
		await saver.putWrites(configOf(threadId, older), [["x", 5]], "t");
		expect(await grove().leaf(sid)).toBe(newer);
		await saver.putWrites(configOf(threadId, newer), [["x", 6]], "t");
		expect(await grove().leaf(sid)).toBe(newer);
		const latest = await saver.getTuple({ configurable: { thread_id: threadId } });
		expect(latest?.checkpoint.id).toBe(newer);
		expect(latest?.pendingWrites).toEqual([["t", "x", 6]]);
		expect((await saver.getTuple(configOf(threadId, older)))?.pendingWrites).toEqual([["t", "x", 5]]);
		// A checkpoint put twice is stored once.
		await saver.put(configOf(threadId), checkpoint(newer, { x: 3 }, { x: 3 }), metadata, { x: 3 });
		expect((await saver.getTuple(configOf(threadId, newer)))?.checkpoint.channel_values).toEqual({ x: 2 });
		expect((await grove().entries(sid)).filter((entry) => entry.id === newer)).toHaveLength(1);
	});

	it("keeps the next checkpoint the latest when another process's writes for its parent land after it", async () => {
		const threadId = "beside";
		const other = await initializer.createCheckpointer();
		try {
			for (let round = 0; round < 10; round++) {
				const thread = `${threadId}-${round}`;
				const first = uuid6(-1);
				const second = uuid6(-1);
				const firstConfig = await saver.put(configOf(thread), checkpoint(first, { x: 1 }, { x: 1 }), metadata, { x: 1 });
				const put = saver.put(firstConfig, checkpoint(second, { x: 2 }, { x: 2 }), metadata, { x: 2 });
				if (round % 2 === 1) await put;
				await other.putWrites(firstConfig, [["x", round]], "t");
				await put;
				expect((await other.getTuple({ configurable: { thread_id: thread } }))?.checkpoint.id).toBe(second);
				expect((await saver.getTuple(firstConfig))?.pendingWrites).toEqual([["t", "x", round]]);
			}
		} finally {
			await initializer.destroyCheckpointer?.(other);
		}
	});

	it("deduplicates writes when read: the first for a task's index, the last for special channels", async () => {
		const threadId = "dedupe";
		const id = uuid6(-1);
		const config = await saver.put(configOf(threadId), checkpoint(id, {}, {}), metadata, {});
		await saver.putWrites(config, [["a", 1], [ERROR, "first error"]], "task-b");
		await saver.putWrites(config, [["a", 2], [ERROR, "last error"]], "task-b");
		await saver.putWrites(config, [["a", 3]], "task-a", "");
		const tuple = await saver.getTuple(config);
		expect(tuple?.pendingWrites).toEqual([
			["task-a", "a", 3],
			["task-b", ERROR, "last error"],
			["task-b", "a", 1],
		]);
	});

	it("reads the latest checkpoint with a handful of requests, and puts a child without reading its parent", async () => {
		const threadId = "cheap";
		const client = fresh();
		const counted = new GroveSaver({ client });
		// Step s changes channel c(s % 5) to version s + 1; `doc` is written once, at step 0.
		const versions: Record<string, number> = { doc: 1 };
		const values: Record<string, unknown> = { doc: "kept once" };
		let config = configOf(threadId);
		for (let step = 0; step < 30; step += 1) {
			const channel = `c${step % 5}`;
			versions[channel] = step + 1;
			values[channel] = step;
			const changed = step === 0 ? { doc: 1, [channel]: 1 } : { [channel]: step + 1 };
			config = (await counted.put(config, checkpoint(uuid6(-1), { ...values }, { ...versions }), { ...metadata, step }, changed)) as typeof config;
			await counted.putWrites(config, [["c0", step]], `task-${step}`);
		}
		const requests = vi.spyOn(client, "request");
		const streams = vi.spyOn(client, "streamAll");
		const whole = vi.spyOn(client, "iterEntries");
		const latest = await counted.getTuple({ configurable: { thread_id: threadId } });
		expect(latest?.metadata?.step).toBe(29);
		expect(latest?.checkpoint.channel_values).toEqual({ doc: "kept once", c0: 25, c1: 26, c2: 27, c3: 28, c4: 29 });
		expect(latest?.pendingWrites).toEqual([["task-29", "c0", 29]]);
		expect(whole).not.toHaveBeenCalled();
		// leaf, the checkpoint, its children, and the first checkpoint (doc) and four others (c0..c3).
		expect(requests.mock.calls.length + streams.mock.calls.length).toBe(2 + 1 + 5);

		requests.mockClear();
		streams.mockClear();
		await counted.put(latest!.config, checkpoint(uuid6(-1), { doc: "kept once" }, { doc: 1 }), metadata, {});
		// get the session, append: the parent's index was remembered by the read.
		expect(requests.mock.calls.map(([method, path]) => `${method} ${path.replace(/^.*\/sessions\/[^/]+/, "")}`)).toEqual([
			"GET ",
			"POST /entries/exact",
		]);
		expect(whole).not.toHaveBeenCalled();
		counted.close();
		client.close();
	});

	it("reads a value the index misses from the whole session", async () => {
		const threadId = "miss";
		const first = uuid6(-1);
		const second = uuid6(-1);
		// The first checkpoint says `x` is at version 1 but stores no value for it: no index entry.
		await saver.put(configOf(threadId), checkpoint(first, { x: "one" }, { x: 1 }), metadata, {});
		expect((await saver.getTuple(configOf(threadId, first)))?.checkpoint.channel_values).toEqual({});
		// A later, unrelated root stores x at version 1: the search of the session finds it.
		await saver.put(configOf(threadId), checkpoint(second, { x: "one" }, { x: 1 }), metadata, { x: 1 });
		expect((await saver.getTuple(configOf(threadId, first)))?.checkpoint.channel_values).toEqual({ x: "one" });
	});

	it("lists threads and namespaces across sessions, and deletes every namespace of a thread", async () => {
		const put = (threadId: string, ns: string) =>
			saver.put({ configurable: { thread_id: threadId, checkpoint_ns: ns } }, checkpoint(uuid6(-1), {}, {}), metadata, {});
		await put("t1", "");
		await put("t1", "inner|1");
		await put("t10", "");
		await put("t2", "");
		await grove().createSession({ id: "not-langgraph" });
		const seen = async (config: { configurable: Record<string, unknown> }) => {
			const out: string[] = [];
			for await (const tuple of saver.list(config)) out.push(`${tuple.config.configurable?.thread_id}/${tuple.config.configurable?.checkpoint_ns}`);
			return out.sort();
		};
		expect(await seen({ configurable: {} })).toEqual(["t1/", "t1/inner|1", "t10/", "t2/"]);
		expect(await seen({ configurable: { thread_id: "t1" } })).toEqual(["t1/", "t1/inner|1"]);
		expect(await seen({ configurable: { checkpoint_ns: "inner|1" } })).toEqual(["t1/inner|1"]);
		await saver.deleteThread("t1");
		expect(await seen({ configurable: {} })).toEqual(["t10/", "t2/"]);
		expect((await grove().allSessions()).map((session) => session.id).sort()).toEqual(
			[sessionIdOf("t10", ""), sessionIdOf("t2", ""), "not-langgraph"].sort(),
		);
	});

	it("orders calls LangGraph does not wait for: writes before their checkpoint's put wait for it", async () => {
		const threadId = "unawaited";
		const sid = sessionIdOf(threadId, "");
		const [first, second] = [uuid6(-1), uuid6(-1)];
		const firstConfig = configOf(threadId, first);
		// As LangGraph's `async` durability does: the task's writes come before the put of their checkpoint.
		const early = saver.putWrites(firstConfig, [["x", "early"]], "task-1");
		const putFirst = saver.put(configOf(threadId), checkpoint(first, { x: 0 }, { x: 1 }), metadata, { x: 1 });
		const putSecond = saver.put(firstConfig, checkpoint(second, { x: 1 }, { x: 2 }), metadata, { x: 2 });
		const late = saver.putWrites(firstConfig, [["x", "late"]], "task-2");
		await Promise.all([early, putFirst, putSecond, late]);
		const entries = await grove().entries(sid);
		expect(entries.map((entry) => [entry.id.replace(/~w[0-9a-f]{12}$/, "~w"), entry.parentId])).toEqual([
			[first, null],
			[`${first}~w`, first],
			[second, first],
			[`${first}~w`, first],
		]);
		expect(await grove().leaf(sid)).toBe(second);
		expect((await saver.getTuple(firstConfig))?.pendingWrites).toEqual([
			["task-1", "x", "early"],
			["task-2", "x", "late"],
		]);
		expect((await saver.getTuple({ configurable: { thread_id: threadId } }))?.checkpoint.id).toBe(second);

		// Writes for a checkpoint that never comes are appended without a parent once the session is idle.
		const never = uuid6(-1);
		await saver.putWrites(configOf(threadId, never), [["x", "lost"]], "task-3");
		const orphan = (await grove().entries(sid)).at(-1);
		expect(orphan?.id).toMatch(new RegExp(`^${never}~w[0-9a-f]{12}$`));
		expect(orphan?.parentId).toBeNull();
		expect(await grove().leaf(sid)).toBe(second);
		expect((await grove().verify()).ok).toBe(true);
	});

	/** A client whose answers come after a random delay of up to 15 ms: LangGraph's unawaited calls interleave. */
	class SlowClient extends GroveClient {
		override async request<T>(method: string, path: string, options: { query?: Record<string, unknown>; body?: unknown } = {}): Promise<T> {
			await new Promise((done) => setTimeout(done, Math.random() * 15));
			return super.request<T>(method, path, options as Parameters<GroveClient["request"]>[2]);
		}
	}

	it.each([
		["", () => saver],
		[" on a slow server", () => new GroveSaver({ client: new SlowClient({ transport: fresh().transport }) })],
	])("runs a LangGraph graph%s, whose time travel is a branch of the session", async (_, make) => {
		const saver = make();
		const State = Annotation.Root({
			log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
			turns: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
		});
		const graph = new StateGraph(State)
			.addNode("echo", (state: typeof State.State) => ({ log: [`echo ${state.log.at(-1)}`], turns: 1 }))
			.addEdge(START, "echo")
			.addEdge("echo", END)
			.compile({ checkpointer: saver });
		const config = { configurable: { thread_id: "graph" } };
		await graph.invoke({ log: ["hi"] }, config);
		await graph.invoke({ log: ["again"] }, config);
		expect((await graph.getState(config)).values).toEqual({ log: ["hi", "echo hi", "again", "echo again"], turns: 2 });

		const history = [];
		for await (const snapshot of graph.getStateHistory(config)) history.push(snapshot);
		expect(history.map((snapshot) => snapshot.metadata?.step)).toEqual([4, 3, 2, 1, 0, -1]);
		const afterFirst = history.find((snapshot) => snapshot.values.turns === 1 && snapshot.next.length === 0)!;
		const afterFirstId = afterFirst.config.configurable?.checkpoint_id as string;
		await graph.invoke({ log: ["other"] }, afterFirst.config);
		expect((await graph.getState(config)).values).toEqual({ log: ["hi", "echo hi", "other", "echo other"], turns: 2 });

		const sid = sessionIdOf("graph", "");
		const tree = await grove().tree(sid);
		const node = tree.nodes.find((candidate) => candidate.id === afterFirstId)!;
		const branches = node.children.map((index) => tree.nodes[index]!).filter((child) => !child.id.includes("~w"));
		expect(branches).toHaveLength(2);
		const active = branches.filter((child) => child.onActivePath);
		expect(active).toHaveLength(1);
		const latest = await saver.getTuple(config);
		expect(latest?.checkpoint.channel_values).toMatchObject({ log: ["hi", "echo hi", "other", "echo other"], turns: 2 });
		// The leaf is on the new branch: walking up from the latest checkpoint reaches the fork point.
		const path = await grove().path(sid, latest!.checkpoint.id);
		expect(path.map((entry) => entry.id)).toContain(active[0]!.id);
		expect(path.map((entry) => entry.id)).toContain(afterFirstId);
		expect((await grove().verify()).ok).toBe(true);
		if (saver.client instanceof SlowClient) saver.client.close();
	});
});
