/**
 * Redaction through GroveClient (`POST .../redact`, `GET .../redactions`, docs/api.md
 * "Operations"): a value or an entry's whole content reads as "[redacted]" in every read after,
 * the redactions are listed and logged as operations, seals taken before still hold, verify
 * explains the changed lines, and what cannot be redacted is refused. On the run's server, or in
 * this process (GROVE_TRANSPORT=in-process). Secrets carry this run's tag, so what other test
 * files write to the same store never matches.
 */
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import type { Redaction, WireEntry } from "../src/types.js";
import { testClient } from "./clients.js";
import { rejection } from "./rejection.js";

const client = testClient();
const redactor = client.withName("ts-redactor/1");
afterAll(() => {
	redactor.close();
	client.close();
});

const run = randomUUID().replaceAll("-", "").slice(0, 10);
const HEX = /^[0-9a-f]{64}$/;

let counter = 0;
async function session(): Promise<string> {
	const id = `redact-${process.pid}-${run}-${counter++}`;
	await client.createSession({ id });
	return id;
}

function user(text: string) {
	return { role: "user", content: text, timestamp: 1 };
}

function assistant(...texts: string[]) {
	return { role: "assistant", content: texts.map((text) => ({ type: "text", text })), timestamp: 2 };
}

function messageOf(entry: WireEntry | undefined): { content: unknown } {
	return entry?.message as { content: unknown };
}

/** Checks a redaction's shape: its digests are hex and the line changed. */
function expectDigests(redaction: Redaction): void {
	expect(redaction.removed).toMatch(HEX);
	expect(redaction.before).toMatch(HEX);
	expect(redaction.after).toMatch(HEX);
	expect(redaction.after).not.toBe(redaction.before);
	expect(typeof redaction.timeMs).toBe("number");
	expect(typeof redaction.recordId).toBe("string");
}

describe("redact", () => {
	it("replaces a value by path and an entry's whole content in every read, listed and logged", async () => {
		const sid = await session();
		const secret = `hunter2x${run}`;
		const asked = await client.append(sid, user(`my password is ${secret}`));
		const answered = await client.append(sid, assistant(`noted: ${secret}`, "kept text"));
		const last = await client.append(sid, user("nothing to hide"));
		expect(await client.exportSession(sid)).toContain(secret);
		expect((await client.search(secret, { session: sid })).hits.map((h) => h.entry).sort()).toEqual([asked, answered].sort());
		const seal = await client.seal(sid);
		const verifiedBefore = await client.verify();

		const byPath = await redactor.redact(sid, answered, { path: "/message/content/0/text", reason: "a password" });
		expect(byPath).toMatchObject({
			entryId: answered,
			paths: ["/message/content/0/text"],
			reason: "a password",
			actor: "ts-redactor/1",
		});
		expectDigests(byPath);
		const whole = await client.redact(sid, asked, { reason: "the whole message" });
		expect(whole).toMatchObject({ entryId: asked, paths: ["/message/content"], reason: "the whole message", actor: "server" });
		expectDigests(whole);
		expect(whole.recordId).not.toBe(byPath.recordId);

		// Every read shows the marker, none the secret.
		const entries = await client.entries(sid);
		expect(entries.map((e) => e.id)).toEqual([asked, answered, last]);
		expect(messageOf(entries[0]).content).toBe("[redacted]");
		expect(messageOf(entries[1]).content).toEqual([
			{ type: "text", text: "[redacted]" },
			{ type: "text", text: "kept text" },
		]);
		expect(JSON.stringify(entries)).not.toContain(secret);
		expect(await client.getEntry(sid, answered)).toEqual(entries[1]);
		const context = await client.context(sid);
		expect(context.messages).toEqual([
			{ role: "user", content: "[redacted]", timestamp: 1 },
			{ role: "assistant", content: [{ type: "text", text: "[redacted]" }, { type: "text", text: "kept text" }], timestamp: 2 },
			user("nothing to hide"),
		]);
		const exported = await client.exportSession(sid);
		expect(exported).not.toContain(secret);
		expect(exported).toContain("[redacted]");
		expect(JSON.stringify(await client.log(sid))).not.toContain(secret);
		expect(JSON.stringify(await client.path(sid))).not.toContain(secret);
		expect((await client.search(secret, { session: sid })).hits).toEqual([]);
		expect((await client.search("kept text", { session: sid })).hits.map((h) => h.entry)).toEqual([answered]);
		// The leaf stays where it was.
		expect(await client.leaf(sid)).toBe(last);

		expect(await client.redactions(sid)).toEqual([byPath, whole]);
		const [newest, previous] = await client.operations(sid, { limit: 2 });
		expect(newest).toMatchObject({ op: 4, kind: "redact", actor: "server", leafBefore: last, leafAfter: last, records: 1, firstId: whole.recordId });
		expect(previous).toMatchObject({ op: 3, kind: "redact", actor: "ts-redactor/1", firstId: byPath.recordId });
		expect(newest?.timeMs).toBe(whole.timeMs);

		// The seal taken before still holds: the history up to it is what was sealed.
		expect(await client.checkSeal(sid, seal.digest)).toEqual({ extends: true, operations: 3, records: 3 });
		const verified = await client.verify();
		expect(verified.ok).toBe(true);
		expect(verified.problems).toEqual([]);
		// Other test files share the run's server, and none redacts: this test's two records.
		expect(verified.redacted - verifiedBefore.redacted).toBe(2);
	});

	it("redacts an array content whole as one text block, chained on an earlier redaction", async () => {
		const sid = await session();
		const secret = `tokenx${run}`;
		const id = await client.append(sid, assistant(`first ${secret}`, `second ${secret}`));
		const first = await client.redact(sid, id, { path: "/message/content/1/text", reason: "one" });
		const second = await client.redact(sid, id, { reason: "all of it" });
		expect(second.paths).toEqual(["/message/content"]);
		// The second redaction starts from the line the first left.
		expect(second.before).toBe(first.after);
		expect(messageOf(await client.getEntry(sid, id)).content).toEqual([{ type: "text", text: "[redacted]" }]);
		expect(JSON.stringify(await client.context(sid))).not.toContain(secret);
		expect((await client.redactions(sid)).map((r) => r.reason)).toEqual(["one", "all of it"]);
		expect((await client.operations(sid)).map((op) => op.kind)).toEqual(["redact", "redact", "append"]);
	});

	it("refuses what cannot be redacted, and changes nothing then", async () => {
		const sid = await session();
		const id = await client.append(sid, user("plain"));
		const redacted = await client.append(sid, user("gone"));
		await client.redact(sid, redacted, { reason: "once" });
		const refused = async (promise: Promise<unknown>, code: string, status: number) => {
			const error = await rejection(promise);
			expect(error).toMatchObject({ code, status });
			return error;
		};
		await refused(client.redact(sid, id, { reason: "" }), "invalid_argument", 400);
		await refused(client.redact(sid, "no-such-entry", { reason: "x" }), "not_found", 404);
		for (const path of ["/id", "/parentId", "/type", "/timestamp", "/message/role"]) {
			const error = await refused(client.redact(sid, id, { path, reason: "x" }), "invalid_argument", 400);
			expect(error.message).toContain(path);
		}
		await refused(client.redact(sid, id, { path: "message/content", reason: "x" }), "invalid_argument", 400);
		await refused(client.redact(sid, id, { path: "/message/nothing", reason: "x" }), "invalid_argument", 400);
		await refused(client.redact(sid, redacted, { reason: "twice" }), "invalid_argument", 400);
		await refused(client.redact(sid, redacted, { path: "/message/content", reason: "twice" }), "invalid_argument", 400);
		await refused(client.redact(`${sid}-none`, id, { reason: "x" }), "not_found", 404);
		await refused(client.redactions(`${sid}-none`), "not_found", 404);
		expect((await client.redactions(sid)).map((r) => r.reason)).toEqual(["once"]);
		expect(await client.operations(sid)).toHaveLength(3);
		expect(messageOf(await client.getEntry(sid, id)).content).toBe("plain");
	});

	it("is listed as nothing for a session never redacted", async () => {
		const sid = await session();
		await client.append(sid, user("hello"));
		expect(await client.redactions(sid)).toEqual([]);
	});
});

describe("gc after a redaction", () => {
	it("reports the redaction fields and leaves the redacted reads as they were", async () => {
		const sid = await session();
		const secret = `gcx${run}`;
		const id = await client.append(sid, user(`keep out ${secret}`));
		await client.redact(sid, id, { path: "/message/content", reason: "before gc" });
		const report = await client.gc();
		// Every redaction was written when it was made: none is left for gc to finish.
		expect(report.redactionsApplied).toBe(0);
		// A running store cannot rewrite its files: the redacted bytes may linger until then.
		expect(report.rewriteDue).toBe(true);
		expect(typeof report.searchCompacted).toBe("boolean");
		expect(typeof report.catalogueRowsRemoved).toBe("number");
		expect(report.removedBytes).toBe(report.removed.reduce((n, r) => n + r.bytes, 0));
		expect(messageOf(await client.getEntry(sid, id)).content).toBe("[redacted]");
		expect(await client.exportSession(sid)).not.toContain(secret);
		expect((await client.verify()).ok).toBe(true);
	});
});
