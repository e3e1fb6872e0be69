/**
 * `GroveClient.listSessions`'s filters (`GET /v1/sessions`, docs/api.md "Sessions"): `cwd`,
 * `name`, `label` and the created/updated times, paging a filtered listing with `next`, and a
 * time that does not read. On the run's server, or in this process (GROVE_TRANSPORT=in-process).
 * Every session of a test has this run's id prefix and working directory, and every listing is
 * of that directory, so what other test files write to the same store never appears.
 */
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import type { ListSessionsOptions } from "../src/types.js";
import { rejection } from "./rejection.js";
import { testClient } from "./clients.js";

const client = testClient("listing-test");
afterAll(() => client.close());

const run = randomUUID().replaceAll("-", "").slice(0, 10);
let counter = 0;

function user(text: string) {
	return { role: "user", content: text, timestamp: 1 };
}

/**
 * Five sessions, `a` to `e` (their ids in that order): `a` named, `b` with a labelled entry,
 * `c` imported with a header of 2020 (created and last active then), `d` created now but last
 * active in 2021, all four in `cwd`; `e` named too, in `other`.
 */
async function fixture() {
	const prefix = `listing-${process.pid}-${run}-${counter++}`;
	const cwd = `/listing/${randomUUID()}`;
	const other = `${cwd}-other`;
	const [a, b, c, d, e] = ["a", "b", "c", "d", "e"].map((x) => `${prefix}-${x}`) as [string, string, string, string, string];
	const label = `keep-${run}`;

	await client.createSession({ id: a, cwd });
	await client.setName(a, "Alpha Report");
	await client.createSession({ id: b, cwd });
	const entry = await client.append(b, user("labelled"));
	await client.setLabel(b, entry, label);
	const header = { type: "session", version: 3, id: c, timestamp: "2020-06-01T00:00:00.000Z", cwd };
	expect((await client.importSession(`${JSON.stringify(header)}\n`)).session).toBe(c);
	await client.createSession({ id: d, cwd });
	await client.append(d, user("old"), { timestamp: "2021-03-01T00:00:00Z" });
	await client.createSession({ id: e, cwd: other });
	await client.setName(e, "alpha too");

	const ids = async (filters: ListSessionsOptions) =>
		(await client.listSessions({ cwd, ...filters })).sessions.map((s) => s.id);
	return { cwd, other, label, a, b, c, d, e, ids };
}

describe("listSessions filters", () => {
	it("cwd, name and label each select exactly their sessions", async () => {
		const { cwd, other, label, a, b, c, d, e, ids } = await fixture();
		expect(await ids({})).toEqual([a, b, c, d]);
		const inOther = await client.listSessions({ cwd: other });
		expect(inOther.sessions.map((s) => s.id)).toEqual([e]);
		expect(inOther.sessions[0]).toMatchObject({ id: e, cwd: other });
		expect(inOther.next).toBeNull();
		// A name contains the text, whatever its case.
		expect(await ids({ name: "ALPHA" })).toEqual([a]);
		expect(await ids({ name: "pha rep" })).toEqual([a]);
		expect(await ids({ name: "beta" })).toEqual([]);
		expect(await ids({ cwd: other, name: "alpha" })).toEqual([e]);
		// A label is matched exactly.
		expect(await ids({ label })).toEqual([b]);
		expect(await ids({ label: label.slice(0, -1) })).toEqual([]);
		// Every filter given must hold.
		expect(await ids({ name: "alpha", label })).toEqual([]);
	});

	it("created and updated times: after includes its bound, before excludes it", async () => {
		const { a, b, c, d, ids } = await fixture();
		expect(await ids({ createdBefore: "2022-01-01" })).toEqual([c]);
		expect(await ids({ createdAfter: "2022-01-01" })).toEqual([a, b, d]);
		expect(await ids({ createdAfter: "1h" })).toEqual([a, b, d]);
		expect(await ids({ createdBefore: "1h" })).toEqual([c]);
		expect(await ids({ createdAfter: "2020-06-01T00:00:00Z", createdBefore: "2020-06-02" })).toEqual([c]);
		expect(await ids({ createdAfter: "2020-06-01T00:00:01Z", createdBefore: "2022-01-01" })).toEqual([]);
		// "updated" is the last record's timestamp, else the creation time.
		expect(await ids({ updatedBefore: "2021-01-01" })).toEqual([c]);
		expect(await ids({ updatedAfter: "2021-03-01T00:00:00Z" })).toEqual([a, b, d]);
		expect(await ids({ updatedBefore: "2021-03-01T00:00:00Z" })).toEqual([c]);
		expect(await ids({ updatedAfter: "2021-01-01", updatedBefore: "2022-01-01" })).toEqual([d]);
		expect(await ids({ updatedAfter: "1d" })).toEqual([a, b]);
		expect(await ids({ updatedAfter: "2w", createdAfter: "1h", name: "alpha" })).toEqual([a]);
	});

	it("pages a filtered listing with limit and next, in both orders", async () => {
		const { a, b, d, cwd } = await fixture();
		const walk = async (order: "asc" | "desc") => {
			const pages: string[][] = [];
			let after: string | undefined;
			for (;;) {
				const page = await client.listSessions({ cwd, createdAfter: "1h", limit: 1, order, after });
				pages.push(page.sessions.map((s) => s.id));
				if (page.next === null) return pages;
				expect(page.next).toBe(page.sessions[0]?.id);
				after = page.next;
			}
		};
		expect(await walk("asc")).toEqual([[a], [b], [d]]);
		expect(await walk("desc")).toEqual([[d], [b], [a]]);
		const two = await client.listSessions({ cwd, updatedAfter: "1d", limit: 2 });
		expect(two.sessions.map((s) => s.id)).toEqual([a, b]);
		expect(two.next).toBeNull();
	});

	it("a time that does not read is invalid_argument naming its parameter", async () => {
		const { cwd } = await fixture();
		expect(await rejection(client.listSessions({ cwd, createdAfter: "later" }))).toMatchObject({
			code: "invalid_argument",
			status: 400,
			message: expect.stringContaining("createdAfter"),
		});
		for (const key of ["createdBefore", "updatedAfter", "updatedBefore"] as const) {
			const error = await rejection(client.listSessions({ cwd, [key]: "7 days" }));
			expect(error).toMatchObject({ code: "invalid_argument", status: 400, message: expect.stringContaining(key) });
		}
	});
});
