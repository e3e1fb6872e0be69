/** The operation log through GroveClient against the real server: operations, undo, seals, reads at a point in time. */
import { afterAll, describe, expect, it } from "vitest";
import { GroveClient } from "../src/client.js";
import { GroveError } from "../src/errors.js";
import { inProcess, testClient } from "./clients.js";
import { rejection } from "./rejection.js";

const client = testClient();
const agent = client.withName("ts-agent/1 (test)");
afterAll(() => {
	client.close();
	agent.close();
});

let counter = 0;
async function session(): Promise<string> {
	const id = `ops-${process.pid}-${counter++}`;
	await client.createSession({ id });
	return id;
}

function user(text: string) {
	return { role: "user", content: text, timestamp: 1 };
}

describe("operations", () => {
	it("are listed newest first, stamped with the client's name", async () => {
		const sid = await session();
		expect(await client.operations(sid)).toEqual([]);
		const a = await agent.append(sid, user("one"));
		const [, c] = await client.appendMany(sid, [user("two"), user("three")]);
		await agent.setLeaf(sid, a);
		const ops = await client.operations(sid);
		expect(ops.map((op) => op.op)).toEqual([2, 1, 0]);
		expect(ops.map((op) => op.kind)).toEqual(["move", "append_many", "append"]);
		expect(ops.map((op) => op.actor)).toEqual(["ts-agent/1 (test)", "server", "ts-agent/1 (test)"]);
		expect(ops[1]).toMatchObject({ records: 2, leafBefore: a, leafAfter: c });
		expect(ops[0]).toMatchObject({ leafBefore: c, leafAfter: a, records: 1 });
		expect(ops[2]).toMatchObject({ leafBefore: null, leafAfter: a, firstId: a, lastId: a, firstSeq: 0 });
		for (const op of ops) {
			expect(typeof op.time).toBe("string");
			expect(Date.parse(op.time!)).toBe(op.timeMs);
		}
		expect(await client.operations(sid, { limit: 1 })).toEqual([ops[0]]);
		expect((await rejection(client.operations(sid, { limit: 0 }))).code).toBe("invalid_argument");
		expect((await rejection(client.operations(`${sid}-none`))).code).toBe("not_found");
	});

	it("refuses a name the server would not take", () => {
		for (const name of ["", "x".repeat(65), "café", "tab\there"]) {
			expect(() => new GroveClient({ url: "unix:/nowhere.sock", name })).toThrow(TypeError);
		}
		expect(() => new GroveClient({ url: "unix:/nowhere.sock", name: "~".repeat(64) })).not.toThrow();
	});
});

describe("undo", () => {
	it("moves the leaf back as an operation of its own", async () => {
		const sid = await session();
		const a = await client.append(sid, user("one"));
		const b = await client.append(sid, user("two"));
		const undo = await agent.undo(sid);
		expect(undo).toMatchObject({ op: 2, kind: "undo", actor: "ts-agent/1 (test)", leafBefore: b, leafAfter: a });
		expect(await client.leaf(sid)).toBe(a);
		expect((await client.operations(sid))[0]).toEqual(undo);
		// Undoing the undo puts the leaf back; to op 0 is before the first append.
		expect((await client.undo(sid)).leafAfter).toBe(b);
		expect((await client.undo(sid, { toOp: 0 })).leafAfter).toBeNull();
		expect(await client.leaf(sid)).toBeNull();
		expect(await client.entries(sid)).toHaveLength(2);
		expect((await rejection(client.undo(sid, { toOp: 99 }))).code).toBe("not_found");
		expect((await rejection(client.undo(await session()))).code).toBe("invalid_state");
	});
});

describe("seals", () => {
	it("are extended by later appends, and a wrong one is not", async () => {
		const sid = await session();
		await client.append(sid, user("one"));
		const seal = await client.seal(sid);
		expect(seal).toMatchObject({ records: 1, operations: 1 });
		expect(seal.digest).toMatch(/^[0-9a-f]{64}$/);
		await client.append(sid, user("two"));
		expect(await client.checkSeal(sid, seal.digest)).toEqual({ extends: true, operations: 1, records: 1 });
		expect((await client.seal(sid)).digest).not.toBe(seal.digest);
		const wrong = `${seal.digest.startsWith("0") ? "1" : "0"}${seal.digest.slice(1)}`;
		expect(await client.checkSeal(sid, wrong)).toEqual({ extends: false });
		expect((await rejection(client.checkSeal(sid, "xyz"))).code).toBe("invalid_argument");
	});
});

describe("a point in time", () => {
	it("answers context, branch, path and tree as the session stood then", async () => {
		const sid = await session();
		const a = await client.append(sid, user("one"));
		await client.append(sid, user("two"));
		await client.setLabel(sid, a, "start");
		const [latest] = await client.operations(sid, { limit: 1 });
		const at = { op: latest!.op };
		const then = {
			context: await client.context(sid),
			harness: await client.context(sid, { preset: "harness" }),
			branch: await client.branch(sid),
			path: await client.path(sid),
			tree: await client.tree(sid),
		};
		await client.setLeaf(sid, a);
		await client.append(sid, user("three"));
		await client.setLabel(sid, a, "moved");
		expect(await client.context(sid)).not.toEqual(then.context);
		expect(await client.context(sid, { at })).toEqual(then.context);
		expect(await client.context(sid, { preset: "harness", at })).toEqual(then.harness);
		expect(await client.branch(sid, { at })).toEqual(then.branch);
		expect(await client.path(sid, { at })).toEqual(then.path);
		const iterated = [];
		for await (const entry of client.iterPath(sid, { at })) iterated.push(entry);
		expect(iterated).toEqual(then.path);
		expect(await client.tree(sid, { at })).toEqual(then.tree);
		expect((await client.context(sid, { at: { op: 0 } })).messages).toHaveLength(1);
		// A time after every operation is now; one before the first is no point of the session.
		const future = { time: "2999-01-01T00:00:00.000Z" };
		expect(await client.tree(sid, { at: future })).toEqual(await client.tree(sid));
		expect(await client.branch(sid, { at: future })).toEqual(await client.branch(sid));
		expect((await rejection(client.tree(sid, { at: { time: "2000-01-01T00:00:00Z" } }))).code).toBe("not_found");
		expect((await rejection(client.context(sid, { at: { op: 99 } }))).code).toBe("not_found");
		expect((await rejection(client.context(sid, { at: { time: "yesterday" } }))).code).toBe("invalid_argument");
		expect((await rejection(client.context(sid, { leaf: a, at }))).code).toBe("invalid_argument");
		expect((await rejection(client.branch(sid, { from: a, at }))).code).toBe("invalid_argument");
		// A start entry still works as before, given as a string or in the options.
		expect(await client.path(sid, { from: a })).toEqual(await client.path(sid, a));
	});
});
