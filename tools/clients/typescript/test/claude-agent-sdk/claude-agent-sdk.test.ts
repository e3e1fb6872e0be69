/**
 * GroveSessionStore (src/claude-agent-sdk.ts) under the Claude Agent SDK for TypeScript
 * (`@anthropic-ai/claude-agent-sdk`, installed in this folder apart: `npm ci --omit=optional`).
 * The npm package ships no conformance suite for stores, so this is a differential test: the same
 * transcripts appended to grove and to the SDK's own `InMemorySessionStore`, then every store
 * method and the SDK's store helpers (list, info, messages, subagents, rename, tag, fork, delete)
 * compared. On the run's server, or in this process (GROVE_TRANSPORT=in-process).
 */
import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import {
	deleteSession,
	foldSessionSummary,
	forkSession,
	getSessionInfo,
	getSessionMessages,
	getSubagentMessages,
	InMemorySessionStore,
	listSessions,
	listSubagents,
	query,
	renameSession,
	type SpawnedProcess,
	type SpawnOptions,
	type SessionKey,
	type SessionStore,
	type SessionStoreEntry,
	tagSession,
} from "@anthropic-ai/claude-agent-sdk";
import { afterAll, describe, expect, it } from "vitest";
import { ENTRY, GroveSessionStore, sessionOf } from "../../src/claude-agent-sdk.js";
import { testClient } from "../clients.js";

const client = testClient("claude-agent-sdk-test");
afterAll(() => client.close());

function fresh(options: { fold?: boolean } = { fold: true }): GroveSessionStore {
	return new GroveSessionStore(client, {
		prefix: `cc${randomUUID().replaceAll("-", "").slice(0, 12)}`,
		...(options.fold ? { foldSessionSummary } : {}),
	});
}

// The adapter has the SDK's type (checked by tsc).
const asStore = (store: GroveSessionStore): SessionStore => store;

/** The project key the SDK's helpers use for `dir`, as a store sees it. */
async function projectKeyOf(dir: string): Promise<string> {
	let seen = "";
	const probe: SessionStore = {
		async append() {},
		async load() {
			return null;
		},
		async listSessions(projectKey) {
			seen = projectKey;
			return [];
		},
	};
	await listSessions({ dir, sessionStore: probe });
	return seen;
}

/** A main transcript as Claude Code writes one: two turns with a tool call, a compaction boundary, a title, a tag. */
function transcript(sid: string, cwd: string): SessionStoreEntry[] {
	const ids = Array.from({ length: 7 }, () => randomUUID());
	const line = (type: string, i: number, parent: number | null, content: unknown, extra: Record<string, unknown> = {}) => ({
		type,
		uuid: ids[i],
		parentUuid: parent === null ? null : ids[parent],
		sessionId: sid,
		isSidechain: false,
		timestamp: `2026-01-01T00:00:0${i}.000Z`,
		cwd,
		message: { role: type === "user" ? "user" : "assistant", content },
		...extra,
	});
	return [
		line("user", 0, null, "Wie ist das Wetter in Zürich?"),
		line("assistant", 1, 0, [{ type: "tool_use", id: "toolu_1", name: "weather", input: { city: "Zürich" } }]),
		line("user", 2, 1, [{ type: "tool_result", tool_use_id: "toolu_1", content: "sonnig 😀" }]),
		line("assistant", 3, 2, [{ type: "text", text: "Sonnig." }]),
		{ type: "custom-title", customTitle: "Wetter", sessionId: sid },
		{ type: "system", subtype: "compact_boundary", uuid: ids[4], parentUuid: null, logicalParentUuid: ids[3], sessionId: sid, timestamp: "2026-01-01T00:00:04.000Z", cwd, isSidechain: false, content: "compacted" },
		line("user", 5, 4, "Und morgen?"),
		line("assistant", 6, 5, [{ type: "text", text: "Regen." }]),
		{ type: "tag", tag: "weather", sessionId: sid },
	];
}

/** An answer with the fields that differ by nature (times) left out. */
function plain(value: unknown): unknown {
	if (Array.isArray(value)) return value.map(plain);
	if (typeof value === "object" && value !== null) {
		return Object.fromEntries(Object.entries(value).filter(([k]) => k !== "lastModified" && k !== "mtime" && k !== "fileSize").map(([k, v]) => [k, plain(v)]));
	}
	return value;
}

describe("GroveSessionStore", () => {
	it("answers as the SDK's InMemorySessionStore, method by method and through the SDK's helpers", async () => {
		const dir = "/tmp/grove-claude-test";
		const projectKey = await projectKeyOf(dir);
		expect(projectKey).not.toBe("");
		const sid = randomUUID();
		const lines = transcript(sid, dir);
		const sub: SessionStoreEntry[] = [
			{ type: "user", uuid: randomUUID(), parentUuid: null, sessionId: sid, isSidechain: true, agentId: "a1", timestamp: "2026-01-01T00:00:09.000Z", message: { role: "user", content: "Sub task" } },
			{ type: "agent_metadata", toolUseId: "toolu_9", sessionId: sid },
		];
		const grove = asStore(fresh());
		const memory = new InMemorySessionStore();
		for (const store of [grove, memory]) {
			const key: SessionKey = { projectKey, sessionId: sid };
			await store.append(key, lines.slice(0, 3));
			await store.append(key, lines.slice(3, 5));
			await store.append(key, lines.slice(5));
			await store.append({ ...key, subpath: "subagents/agent-a1" }, sub);
		}
		// A batch the SDK sent again after a timeout: its uuids are stored once.
		await grove.append({ projectKey, sessionId: sid }, lines.slice(5, 7));

		const answers = async (store: SessionStore) => {
			const key: SessionKey = { projectKey, sessionId: sid };
			// Copies: the in-memory store hands out its own arrays, which later appends grow.
			const load = async (k: SessionKey) => structuredClone(await store.load(k));
			const found: unknown[] = [
				await load(key),
				await load({ ...key, subpath: "subagents/agent-a1" }),
				await load({ projectKey, sessionId: "nope" }),
				plain(await store.listSessions?.(projectKey)),
				await store.listSubkeys?.(key),
				plain(await store.listSessionSummaries?.(projectKey)),
				plain(await listSessions({ dir, sessionStore: store })),
				plain(await getSessionInfo(sid, { dir, sessionStore: store })),
				plain(await getSessionMessages(sid, { dir, sessionStore: store })),
				plain(await getSessionMessages(sid, { dir, sessionStore: store, limit: 1, offset: 1 })),
				await listSubagents(sid, { dir, sessionStore: store }),
				plain(await getSubagentMessages(sid, "a1", { dir, sessionStore: store })),
			];
			await renameSession(sid, "Das Wetter", { dir, sessionStore: store });
			await tagSession(sid, "forecast", { dir, sessionStore: store });
			found.push(plain(await getSessionInfo(sid, { dir, sessionStore: store })));
			const fork = await forkSession(sid, { dir, sessionStore: store, upToMessageId: lines[3]?.uuid, title: "Kopie" });
			const copy = (await store.load({ projectKey, sessionId: fork.sessionId })) ?? [];
			// The fork's uuids and session id are fresh: compared as what they stand for.
			const names = new Map<unknown, string>([[fork.sessionId, "fork"]]);
			copy.forEach((e, i) => e.uuid !== undefined && names.set(e.uuid, `uuid ${i}`));
			const rename = (v: unknown): unknown => JSON.parse(JSON.stringify(v), (_k, x) => (names.has(x) ? names.get(x) : x));
			found.push(rename(copy.map((e) => ({ ...e, timestamp: undefined }))));
			const forked = await getSessionMessages(fork.sessionId, { dir, sessionStore: store });
			found.push(rename(plain(forked.map((m) => ({ ...m, timestamp: undefined })))));
			await deleteSession(sid, { dir, sessionStore: store });
			found.push(await store.load(key), await store.load({ ...key, subpath: "subagents/agent-a1" }));
			return found;
		};
		const onGrove = await answers(grove);
		expect(onGrove).toEqual(await answers(memory));
		// The messages after the compaction boundary; the deleted transcript and its subagent are gone.
		expect(onGrove[8]).toHaveLength(2);
		expect(onGrove.slice(-2)).toEqual([null, null]);
	});

	it("keeps entries as grove entries found by their uuid, and a store without the fold has no summaries", async () => {
		const store = fresh({ fold: false });
		expect(store.listSessionSummaries).toBeUndefined();
		const key: SessionKey = { projectKey: "p", sessionId: "s" };
		const lines = transcript("s", "/x");
		await store.append(key, lines);
		await store.append(key, [...lines.slice(0, 2), { type: "tag", tag: "again" }]);
		await store.append(key, [lines[0]!, lines[0]!]);
		expect(await store.load(key)).toEqual([...lines, { type: "tag", tag: "again" }]);
		const sid = sessionOf(key, store.prefix);
		const entry = await client.getEntry(sid, lines[1]!.uuid!);
		expect(entry.customType).toBe(ENTRY);
		expect(entry.data).toEqual(lines[1]);
		expect((await client.entries(sid)).every((e) => e.customType === ENTRY)).toBe(true);
	});

	it("hashes long keys into a session id", async () => {
		const store = fresh();
		const key: SessionKey = { projectKey: `-${"x".repeat(250)}`, sessionId: randomUUID(), subpath: `subagents/${"y".repeat(100)}` };
		const sid = sessionOf(key, store.prefix);
		expect(sid.length).toBeLessThanOrEqual(256);
		expect(sid.split("-")).toHaveLength(4);
		await store.append(key, [{ type: "x", n: 1 }]);
		expect(await store.load(key)).toEqual([{ type: "x", n: 1 }]);
		expect(await store.listSubkeys({ projectKey: key.projectKey, sessionId: key.sessionId })).toEqual([key.subpath]);
		expect(() => new GroveSessionStore(client, { prefix: "c-c" })).toThrow(/letters and digits/);
	});

	it("resumes a session kept in grove: the SDK hands Claude Code the transcript and mirrors its new lines back", async () => {
		// Claude Code itself is a stand-in here (the SDK's `spawnClaudeCodeProcess`): it speaks the
		// SDK's stream-json, reads the transcript the SDK wrote for it from the store, and writes a
		// line as Claude Code does, which the SDK mirrors into the store.
		const store = fresh();
		const dir = mkdtempSync(join(tmpdir(), "grove-resume-"));
		try {
			const projectKey = await projectKeyOf(dir);
			const sid = randomUUID();
			const old = [
				{ type: "user", uuid: randomUUID(), parentUuid: null, sessionId: sid, message: { role: "user", content: "old" } },
				{ type: "custom-title", customTitle: "Alt", sessionId: sid },
			];
			await store.append({ projectKey, sessionId: sid }, old);
			let args: string[] = [];
			let handed: unknown[] = [];
			const claudeCode = (spawn: SpawnOptions): SpawnedProcess => {
				args = spawn.args;
				const transcript = join(spawn.env.CLAUDE_CONFIG_DIR ?? "", "projects", projectKey, `${sid}.jsonl`);
				handed = readFileSync(transcript, "utf8").trim().split("\n").map((l) => JSON.parse(l));
				const stdin = new PassThrough();
				const stdout = new PassThrough();
				const events = new EventEmitter();
				const send = (o: object) => stdout.write(`${JSON.stringify(o)}\n`);
				const proc = {
					stdin,
					stdout,
					killed: false,
					exitCode: null as number | null,
					kill() {
						proc.killed = true;
						events.emit("exit", null, "SIGTERM");
						return true;
					},
					on: (event: string, f: (...a: unknown[]) => void) => void events.on(event, f),
					once: (event: string, f: (...a: unknown[]) => void) => void events.once(event, f),
					off: (event: string, f: (...a: unknown[]) => void) => void events.off(event, f),
				};
				let buffered = "";
				stdin.on("data", (chunk: Buffer) => {
					buffered += chunk.toString("utf8");
					for (let i = buffered.indexOf("\n"); i >= 0; i = buffered.indexOf("\n")) {
						const line = buffered.slice(0, i);
						buffered = buffered.slice(i + 1);
						if (line.trim() === "") continue;
						const m = JSON.parse(line) as { type: string; request_id?: string; request?: { subtype?: string }; message?: unknown };
						if (m.type === "control_request") {
							const response = m.request?.subtype === "initialize" ? { commands: [], models: [], account: {}, output_style: "default" } : {};
							send({ type: "control_response", response: { subtype: "success", request_id: m.request_id, response } });
						} else if (m.type === "user") {
							const entry = { type: "user", uuid: randomUUID(), parentUuid: old[0]?.uuid, sessionId: sid, message: m.message };
							send({ type: "transcript_mirror", filePath: transcript, entries: [entry] });
							const usage = {};
							send({ type: "result", subtype: "success", is_error: false, result: "ok", session_id: sid, uuid: randomUUID(), duration_ms: 1, duration_api_ms: 1, num_turns: 1, total_cost_usd: 0, usage, modelUsage: {}, permission_denials: [] });
							setTimeout(() => {
								stdout.end();
								proc.exitCode = 0;
								events.emit("exit", 0, null);
							}, 20);
						}
					}
				});
				return proc as unknown as SpawnedProcess;
			};
			const seen: string[] = [];
			const options = { cwd: dir, resume: sid, sessionStore: store, spawnClaudeCodeProcess: claudeCode, pathToClaudeCodeExecutable: "/bin/false", env: { ...process.env, ANTHROPIC_API_KEY: "none" } };
			for await (const message of query({ prompt: "new", options })) seen.push(message.type);
			expect(args).toContain(`--resume=${sid}`);
			expect(handed).toEqual(old);
			expect(seen.at(-1)).toBe("result");
			const loaded = (await store.load({ projectKey, sessionId: sid })) ?? [];
			expect(loaded.slice(0, 2)).toEqual(old);
			expect(loaded.slice(2).map((e) => (e.message as { content?: unknown } | undefined)?.content)).toEqual([[{ type: "text", text: "new" }]]);
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	});

	it("keeps the order of concurrent appends to a key and no queue once they are done", async () => {
		const store = fresh();
		const key: SessionKey = { projectKey: "p", sessionId: randomUUID() };
		const uuids = Array.from({ length: 8 }, () => randomUUID());
		await Promise.all(uuids.map((uuid) => store.append(key, [{ type: "user", uuid, sessionId: key.sessionId }])));
		expect(((await store.load(key)) ?? []).map((e) => e.uuid)).toEqual(uuids);
		// A session's queue goes with its last append: a long-lived store holds busy sessions only.
		await new Promise((resolve) => setImmediate(resolve));
		expect((store as unknown as { queues: Map<string, unknown> }).queues.size).toBe(0);
	});
});
