/**
 * Retention through GroveClient (`POST /v1/retain`, `GET /v1/retain/log`, `PUT .../pin`,
 * docs/api.md "Retention"): a plan names the sessions a policy removes and changes nothing, a
 * label or a pin spares a session, a run deletes the rest and is recorded in the store's
 * operation log, and a policy that does not read is refused. On the run's server, or in this
 * process (GROVE_TRANSPORT=in-process). Every test's sessions are under a prefix of this run's
 * tag, and every rule names its test's prefix, so the sessions other test files write to the
 * same store never match.
 *
 * Last activity is the timestamp of a session's last record: the tests give their appends
 * timestamps (in 2024, seconds apart) so the order by activity is theirs, not the clock's.
 */
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import type { RetentionItem, RetentionPlan, RetentionPolicy } from "../src/types.js";
import { testClient } from "./clients.js";
import { rejection } from "./rejection.js";

const client = testClient();
const retainer = client.withName("ts-retainer/1");
afterAll(() => {
	retainer.close();
	client.close();
});

const run = randomUUID().replaceAll("-", "").slice(0, 10);

let counter = 0;
/** A prefix no other test's (or test file's) session has. */
function prefix(): string {
	return `ret-${process.pid}-${run}-${counter++}-`;
}

/** `seconds` after 2024-01-01T00:00:00Z, as an entry's timestamp: long before the tests run. */
function at(seconds: number): string {
	return new Date(Date.UTC(2024, 0, 1) + seconds * 1000).toISOString();
}

function user(text: string) {
	return { role: "user", content: text, timestamp: 1 };
}

/** The sessions of a plan's list, sorted. */
function ids(items: RetentionItem[]): string[] {
	return items.map((i) => i.session).sort();
}

/** The item of `session` in a plan's list. */
function item(items: RetentionItem[], session: string): RetentionItem {
	const found = items.find((i) => i.session === session);
	expect(found, `${session} in ${JSON.stringify(items)}`).toBeDefined();
	return found as RetentionItem;
}

function expectBytesAddUp(plan: RetentionPlan): void {
	expect(plan.bytes).toBe(plan.remove.reduce((n, i) => n + i.bytes, 0));
}

async function expectGone(sid: string): Promise<void> {
	expect(await rejection(client.getSession(sid))).toMatchObject({ code: "not_found", status: 404 });
}

describe("retention", () => {
	it("plans without changing anything, spares the labelled and the pinned, applies and logs the run", async () => {
		const p = prefix();
		const [a, b, c, d] = ["a", "b", "c", "d"].map((x) => `${p}${x}`) as [string, string, string, string];
		const first: Record<string, string> = {};
		for (const [i, sid] of [a, b, c, d].entries()) {
			await client.createSession({ id: sid });
			first[sid] = await client.append(sid, user(`turn of ${sid}`), { timestamp: at(i + 1) });
		}
		const keepNewest: RetentionPolicy = { rules: [{ prefix: p, keepNewest: 1 }] };
		const logBefore = await client.retentionLog();

		// d is the newest by last activity: the other three go.
		const plan = await client.retentionPlan(keepNewest);
		expect(ids(plan.remove)).toEqual([a, b, c]);
		expect(plan.spared).toEqual([]);
		expectBytesAddUp(plan);
		for (const [i, sid] of [a, b, c].entries()) {
			const it = item(plan.remove, sid);
			expect(it).toMatchObject({ entries: 1, lastActivity: at(i + 1), reasons: ["rule 0: beyond the newest 1"], spared: null });
			expect(it.bytes).toBeGreaterThan(0);
		}
		// A plan changes nothing.
		for (const sid of [a, b, c, d]) expect((await client.getSession(sid)).id).toBe(sid);
		expect(await client.retentionLog()).toEqual(logBefore);
		expect(await client.retentionPlan(keepNewest)).toEqual(plan);

		// A label is a record: b's last activity is now, the newest of the four.
		await client.setLabel(b, first[b] as string, "keep");
		expect(ids((await client.retentionPlan(keepNewest)).remove)).toEqual([a, c, d]);
		// Written to again at an earlier time, b is selected again, and spared for its label.
		await client.append(b, user("later"), { timestamp: at(2.5) });
		const labelled = await client.retentionPlan(keepNewest);
		expect(ids(labelled.remove)).toEqual([a, c]);
		expect(labelled.spared).toEqual([
			{ ...item(plan.remove, b), entries: 3, bytes: item(labelled.spared, b).bytes, lastActivity: at(2.5), spared: "labelled" },
		]);
		expect(item(labelled.spared, b).bytes).toBeGreaterThan(item(plan.remove, b).bytes);
		expectBytesAddUp(labelled);
		// A rule that does not spare labelled sessions takes it.
		const notSparing: RetentionPolicy = { rules: [{ prefix: p, keepNewest: 1, spareLabelled: false }] };
		expect(ids((await client.retentionPlan(notSparing)).remove)).toEqual([a, b, c]);

		// A pin spares a session whatever the rule (a pin is not activity: a keeps its time).
		expect(await client.setPinned(a, true)).toEqual({ session: a, pinned: true });
		const pinned = await client.retentionPlan(keepNewest);
		expect(ids(pinned.remove)).toEqual([c]);
		expect(ids(pinned.spared)).toEqual([a, b]);
		expect(item(pinned.spared, a)).toMatchObject({ spared: "pinned", lastActivity: at(1), reasons: ["rule 0: beyond the newest 1"] });
		expect(item(pinned.spared, b).spared).toBe("labelled");
		const notSparingPinned = await client.retentionPlan(notSparing);
		expect(ids(notSparingPinned.remove)).toEqual([b, c]);
		expect(notSparingPinned.spared.map((i) => [i.session, i.spared])).toEqual([[a, "pinned"]]);
		// Unpinned, it goes again; pinned again, it stays.
		expect(await client.setPinned(a, false)).toEqual({ session: a, pinned: false });
		expect(ids((await client.retentionPlan(keepNewest)).remove)).toEqual([a, c]);
		await client.setPinned(a, true);
		for (const sid of [a, b, c, d]) expect((await client.getSession(sid)).id).toBe(sid);

		// Applied: c goes, the rest stay.
		const done = await retainer.retain(keepNewest);
		expect(ids(done.remove)).toEqual([c]);
		expect(done.spared).toEqual(pinned.spared);
		expect(done.bytes).toBe(item(pinned.remove, c).bytes);
		expect(done.removed).toEqual([{ session: c, archive: null }]);
		expect(done.failed).toEqual([]);
		expect(typeof done.op).toBe("number");
		await expectGone(c);
		for (const sid of [a, b, d]) expect((await client.getSession(sid)).id).toBe(sid);
		const after = await client.retentionPlan(keepNewest);
		expect(after.remove).toEqual([]);
		expect(after.bytes).toBe(0);
		expect(ids(after.spared)).toEqual([a, b]);

		// The run is the store's last operation, done, by the client that asked.
		const log = await client.retentionLog();
		expect(log.slice(0, logBefore.length)).toEqual(logBefore);
		const last = log.at(-1);
		expect(last).toMatchObject({ op: done.op, kind: "retain", status: "done", actor: "ts-retainer/1" });
		expect(Date.parse(last?.time ?? "")).not.toBeNaN();
		expect(last?.detail.removed).toEqual(done.removed);
		expect(last?.detail.failed).toEqual([]);
		expect(last?.detail.archive).toBeNull();
		expect(last?.detail.plan?.remove.map((i) => [i.session, i.lastActivityMs])).toEqual([[c, Date.parse(at(3))]]);
		expect(last?.detail.plan?.spared.map((i) => [i.session, i.spared]).sort()).toEqual([
			[a, "pinned"],
			[b, "labelled"],
		]);
		expect(last?.detail.plan?.bytes).toBe(done.bytes);
		expect(typeof last?.detail.plan?.nowMs).toBe("number");
		// Oldest first, numbered in order.
		expect(log.map((o) => o.op)).toEqual([...log.map((o) => o.op)].sort((x, y) => x - y));

		// Applied again: nothing left to remove, and the run is logged all the same.
		const again = await client.retain(keepNewest);
		expect(again).toMatchObject({ remove: [], removed: [], failed: [], bytes: 0, op: done.op + 1 });
		expect((await client.retentionLog()).at(-1)).toMatchObject({ op: done.op + 1, kind: "retain", status: "done", actor: "server" });
	});

	it("selects by age and size, every condition of a rule, any rule of a policy", async () => {
		const p = prefix();
		const [old, big, small] = [`${p}old`, `${p}big`, `${p}small`];
		for (const sid of [old, big, small]) await client.createSession({ id: sid });
		await client.append(old, user("long ago"), { timestamp: at(1) });
		await client.append(big, user("x".repeat(8000)));
		await client.append(small, user("now"));
		const plan = (rules: RetentionPolicy["rules"]) => client.retentionPlan({ rules });

		const aged = await plan([{ prefix: p, olderThan: "30d" }]);
		expect(ids(aged.remove)).toEqual([old]);
		expect(item(aged.remove, old).reasons).toEqual([`rule 0: last active ${at(1)}`]);
		expect(ids((await plan([{ prefix: p, olderThan: "2025-01-01" }])).remove)).toEqual([old]);
		expect(ids((await plan([{ prefix: p, olderThan: "2023-01-01T00:00:00Z" }])).remove)).toEqual([]);

		const sized = await plan([{ prefix: p, largerThan: 4000 }]);
		expect(ids(sized.remove)).toEqual([big]);
		const bigItem = item(sized.remove, big);
		expect(bigItem.bytes).toBeGreaterThan(8000);
		expect(bigItem.reasons).toEqual([`rule 0: ${bigItem.bytes} bytes`]);
		expect(sized.bytes).toBe(bigItem.bytes);
		expect(ids((await plan([{ prefix: p, largerThan: "4KB" }])).remove)).toEqual([big]);
		expect(ids((await plan([{ prefix: p, largerThan: "1MB" }])).remove)).toEqual([]);

		// Every condition of a rule must hold; any rule selects.
		expect((await plan([{ prefix: p, olderThan: "30d", largerThan: 4000 }])).remove).toEqual([]);
		const both = await plan([
			{ prefix: p, olderThan: "30d" },
			{ prefix: p, largerThan: 4000 },
		]);
		expect(ids(both.remove)).toEqual([big, old]);
		expect(item(both.remove, big).reasons).toEqual([`rule 1: ${bigItem.bytes} bytes`]);
		const twice = await plan([
			{ prefix: p, olderThan: "30d" },
			{ prefix: `${p}o`, keepNewest: 0 },
		]);
		expect(item(twice.remove, old).reasons).toEqual([`rule 0: last active ${at(1)}`, "rule 1: beyond the newest 0"]);
		// The prefix bounds a rule's sessions (and keepNewest counts among them).
		expect(ids((await plan([{ prefix: `${p}b`, keepNewest: 0 }])).remove)).toEqual([big]);
		expect((await plan([{ prefix: `${p}zzz`, keepNewest: 0 }])).remove).toEqual([]);
		for (const sid of [old, big, small]) expect((await client.getSession(sid)).id).toBe(sid);
	});

	it("refuses a policy that does not read, and changes nothing then", async () => {
		const p = prefix();
		const sid = `${p}a`;
		await client.createSession({ id: sid });
		await client.append(sid, user("stay"), { timestamp: at(1) });
		const logBefore = await client.retentionLog();
		const refused = async (policy: unknown, code: string, contains?: string) => {
			// Planned and applied alike.
			for (const call of [client.retentionPlan, client.retain]) {
				const error = await rejection(call.call(client, policy as RetentionPolicy));
				expect(error).toMatchObject({ code, status: 400 });
				if (contains !== undefined) expect(error.message).toContain(contains);
			}
		};
		await refused({ rules: [{ prefix: p }] }, "invalid_argument", "no condition");
		await refused({ rules: [] }, "invalid_argument", "at least one rule");
		await refused({ rules: [{ prefix: p, keepNewest: 0 }], archive: { dir: "/tmp/grove-archive" } }, "invalid_argument", "archives nothing");
		await refused({ rules: [{ prefix: p, olderThan: "soon" }] }, "invalid_argument", "soon");
		await refused({ rules: [{ prefix: p, olderThan: "2999-01-01" }] }, "invalid_argument", "future");
		await refused({ rules: [{ prefix: p, largerThan: "10 parsecs" }] }, "invalid_argument", "not a size");
		await refused({ rules: [{ prefix: p, largerThan: true }] }, "invalid_argument", "not a size");
		await refused({ rules: [{ prefix: p, keepNewest: 0, newest: 1 }] }, "invalid_request");
		await refused({ rules: [{ prefix: p, keepNewest: -1 }] }, "invalid_request");
		await refused({ rule: [] }, "invalid_request");

		expect(await rejection(client.setPinned(`${p}none`, true))).toMatchObject({ code: "not_found", status: 404 });
		expect((await client.getSession(sid)).id).toBe(sid);
		expect(await client.retentionLog()).toEqual(logBefore);
		expect(ids((await client.retentionPlan({ rules: [{ prefix: p, keepNewest: 0 }] })).remove)).toEqual([sid]);
	});
});
