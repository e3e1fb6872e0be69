/** The replay stream through GroveClient against the real server: history, context changes, follow. */
import { randomBytes } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { applyContextChange, GroveClient } from "../src/client.js";
import type { Context, ReplayEvent, ReplayRecord } from "../src/types.js";
import { testClient } from "./clients.js";
import { rejection } from "./rejection.js";

const client = testClient("replayer");
afterAll(() => client.close());

let counter = 0;
async function session(): Promise<string> {
	const id = `replay-${process.pid}-${counter++}`;
	await client.createSession({ id });
	return id;
}

function user(text: string) {
	return { role: "user", content: text, timestamp: 1 };
}

describe("replay", () => {
	it("gives every record's context change, which applied gives the context at its leaf", async () => {
		const sid = await session();
		const a = await client.append(sid, user("one"));
		await client.append(sid, { type: "model_change", provider: "p", modelId: "m" });
		await client.append(sid, user("two"));
		await client.setLeaf(sid, a);
		await client.appendMany(sid, [user("three"), user("four")]);
		const events: ReplayEvent[] = [];
		for await (const event of client.replay(sid)) events.push(event);
		expect(events[0]).toMatchObject({ type: "start", op: 0, leaf: null });
		const ops = events.filter((e) => e.type === "operation");
		expect(ops.map((o) => o.kind)).toEqual(["append", "append", "append", "move", "append_many"]);
		expect(ops.every((o) => o.actor === "replayer")).toBe(true);
		let context = (events[0] as { context: Context }).context;
		const records = events.filter((e): e is ReplayRecord => e.type === "record");
		expect(records).toHaveLength(6);
		for (const record of records) {
			context = applyContextChange(context, record.context);
			expect(context).toEqual(await client.context(sid, { leaf: record.leaf ?? undefined }));
		}
		// The move back to "one" keeps its message and drops the rest; the model change was
		// after it, so no model is set there.
		expect(records[3]?.context).toEqual({ keep: 1, append: [], messages: 1, model: null });
		expect(records[1]?.context.model).toEqual({ provider: "p", modelId: "m" });
		// From and until an operation.
		const part: ReplayEvent[] = [];
		for await (const event of client.replay(sid, { fromOp: 3, untilOp: 3 })) part.push(event);
		expect(part.map((e) => e.type)).toEqual(["start", "operation", "record"]);
		expect((await rejection(collect(client.replay(sid, { fromOp: 9 })))).code).toBe("not_found");
		expect((await rejection(collect(client.replay(sid, { fromOp: 2, untilOp: 1 })))).code).toBe("invalid_argument");
	});

	it("follows new operations as they land, until the loop is left", async () => {
		const sid = await session();
		await client.append(sid, user("before"));
		const seen: ReplayEvent[] = [];
		const follower = (async () => {
			for await (const event of client.replay(sid, { fromOp: 1, follow: true })) {
				seen.push(event);
				if (event.type === "record" && event.seq === 2) break;
			}
		})();
		await waitFor(() => seen.length === 1);
		expect(seen[0]).toMatchObject({ type: "start", op: 1 });
		const one = await client.append(sid, user("live 1"));
		await waitFor(() => seen.length === 3);
		expect(seen[2]).toMatchObject({ type: "record", id: one, context: { keep: 1, messages: 2 } });
		await client.append(sid, user("live 2"));
		await follower;
		expect(seen.map((e) => e.type)).toEqual(["start", "operation", "record", "operation", "record"]);
		// Leaving the loop closed the stream; the server goes on serving.
		expect((await client.health()).ok).toBe(true);
	});
});

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
	const out: T[] = [];
	for await (const item of items) out.push(item);
	return out;
}

async function waitFor(done: () => boolean): Promise<void> {
	for (let i = 0; i < 600 && !done(); i++) await new Promise((r) => setTimeout(r, 50));
	expect(done()).toBe(true);
}

describe("gc", () => {
	it("keeps what sessions reference and removes a deleted session's own payloads", async () => {
		const keep = await session();
		const drop = await session();
		const shared = "K".repeat(9000);
		// Base64 of bytes that do not compress: stored as the 9,000 bytes it decodes to, behind a
		// one-byte tag (text such as "KKKK…" is stored compressed).
		const own = randomBytes(9000).toString("base64");
		await client.append(keep, user(shared));
		await client.append(drop, user(shared));
		await client.append(drop, user(own));
		await client.deleteSession(drop);
		// Other test files share this server: only what this test made is asserted.
		const report = await client.gc();
		expect(report.removed.some((r) => r.bytes === 9000 + 1)).toBe(true);
		expect(report.removedBytes).toBe(report.removed.reduce((n, r) => n + r.bytes, 0));
		const context = await client.context(keep);
		expect(context.messages).toEqual([user(shared)]);
	});
});
