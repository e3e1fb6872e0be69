/**
 * The example harness (bench/agent-run.ts, bench/harness.ts) on a small load against the real
 * server: what it reports, what the sessions hold when read back independently, and that its
 * self-check fails when a session holds something else than was written.
 */
import { randomBytes } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { agentRun, runHarness, sessionId, verify } from "../bench/agent-run.js";
import { testClient, testUrl } from "./clients.js";
import { Rand } from "./random.js";

const url = testUrl();
const client = testClient();
const ROLES = ["user", "assistant", "toolResult", "assistant"];

afterAll(() => client.close());

const prefix = () => `t${randomBytes(4).toString("hex")}-`;

/** Every session of the run holds exactly its generated messages, in order. */
async function checkSessions(pre: string, sessions: number, turns: number): Promise<void> {
	const page = await client.listSessions({ after: pre, limit: sessions + 10 });
	const ids = page.sessions.map((s) => s.id).filter((id) => id.startsWith(pre));
	expect(ids).toEqual(Array.from({ length: sessions }, (_, i) => sessionId(pre, i)));
	for (const [i, sid] of ids.entries()) {
		expect((await client.getSession(sid)).entries).toBe(4 * turns);
		const messages = (await client.context(sid)).messages as Array<Record<string, any>>;
		expect(messages.map((m) => m.role)).toEqual(Array.from({ length: turns }, () => ROLES).flat());
		for (let k = 1; k < messages.length; k += 4) expect(messages[k]!.content[1].id).toBe(messages[k + 1]!.toolCallId);
		expect(messages).toEqual(agentRun(7, i, turns));
	}
}

describe("example harness", () => {
	it.each(["direct", "batch"] as const)("writes every session (%s)", async (mode) => {
		const pre = prefix();
		const { report, problems } = await runHarness({
			url,
			sessions: 20,
			turns: 3,
			seed: 7,
			concurrency: 8,
			mode,
			prefix: pre,
			verify: 5,
			inFlight: 4,
		});
		expect(problems).toEqual([]);
		expect(report).toMatchObject({ client: "typescript", mode, sessions: 20, turns: 3, entries: 240, verified: 5 });
		expect(report.entriesPerSecond).toBeGreaterThan(0);
		expect(report.appendP99Ms).toBeGreaterThanOrEqual(report.appendP50Ms);
		await checkSessions(pre, 20, 3);
	});

	it("its self-check finds a session that differs", async () => {
		const pre = prefix();
		const { problems } = await runHarness({ url, sessions: 3, turns: 2, seed: 7, concurrency: 3, mode: "direct", prefix: pre, verify: 3, inFlight: 2 });
		expect(problems).toEqual([]);
		await client.append(sessionId(pre, 1), { role: "user", content: "one more", timestamp: 1 });
		expect(await verify(client, pre, 7, 2, [0, 1, 2])).toEqual([
			`${pre}000001: 9 entries, 8 written`,
			`${pre}000001: 9 context messages, 8 written`,
		]);
		// Same count, other content: seed 8 wrote other messages.
		expect(await verify(client, pre, 8, 2, [0])).toEqual([`${pre}000000: context message 0 (user) differs from the one written`]);
	});

	it("generates the Python harness's runs", () => {
		const run = agentRun(1, 0, 50);
		expect(run).toEqual(agentRun(1, 0, 50));
		expect(run).not.toEqual(agentRun(1, 1, 50));
		expect(run).toHaveLength(200);
		expect(run.slice(0, 4).map((m) => m.role)).toEqual(ROLES);
		// The same values tests/test_harness.py pins for the Python Rand.
		const r = new Rand(1);
		expect([r.int(1 << 30), r.int(1 << 30), r.int(1 << 30)]).toEqual([673315516, 2937458, 566341946]);
		// Features of one generated run, pinned on both sides, so that the two generators stay equal.
		const pinned = agentRun(3, 5, 2) as Array<Record<string, any>>;
		expect(pinned.reduce((n, m) => n + m.content[0].text.length, 0)).toBe(5689);
		expect(pinned.filter((m) => m.role === "toolResult").map((m) => m.toolCallId)).toEqual(["toolu_5ed24671d5e9c3ce", "toolu_eacfeba3928eb68b"]);
		expect(pinned[7]!.usage.cost.total).toBe(0.0674256);
	});
});
