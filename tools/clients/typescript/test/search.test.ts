/**
 * `GroveClient.search` (`GET /v1/search`, docs/api.md "Search"): what was appended is found at
 * once, the filters, limit and total, and the errors. On the run's server, or in this process
 * (GROVE_TRANSPORT=in-process). Every word is made unique to this run, so what other test files
 * write to the same store never matches.
 */
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { rejection } from "./rejection.js";
import { inProcess, testClient } from "./clients.js";

const client = testClient("search-test");
afterAll(() => client.close());

const run = randomUUID().replaceAll("-", "").slice(0, 10);
/** A word no other test writes: `base` and this run's tag. */
const w = (base: string): string => `${base}x${run}`;

let counter = 0;
async function session(): Promise<string> {
	const id = `search-${process.pid}-${run}-${counter++}`;
	await client.createSession({ id });
	return id;
}

function user(text: string) {
	return { role: "user", content: text, timestamp: 1 };
}

function assistant(text: string) {
	return { role: "assistant", content: [{ type: "text", text }], timestamp: 1 };
}

describe("search", () => {
	it.runIf(inProcess)("runs off node's thread in this process (it may index first)", async () => {
		// An inline call would be done before it returned, before the event loop's next turn;
		// one on node's pool resolves after that turn, whose immediate has run by then.
		let turned = false;
		setImmediate(() => {
			turned = true;
		});
		await client.search(w("turn"));
		expect(turned).toBe(true);
	});

	it("finds an entry right after it is appended, with its snippet, marks and place", async () => {
		const sid = await session();
		const pelican = w("pelican");
		expect((await client.search(pelican)).hits).toEqual([]);
		const id = await client.append(sid, user(`The ${pelican.toUpperCase()} crossed the <river> & the sea`));
		const found = await client.search(pelican);
		expect(found.total).toBe(1);
		expect(found.indexed).toBeGreaterThanOrEqual(0);
		expect(found.hits).toHaveLength(1);
		const [hit] = found.hits;
		expect(hit).toMatchObject({ session: sid, entry: id, seq: 0, type: "message", role: "user", active: true });
		expect(typeof hit?.score).toBe("number");
		expect(hit?.timestamp).toEqual(expect.any(String));
		expect(hit?.snippet).toContain(`The ${pelican.toUpperCase()} crossed`);
		// The highlight's byte range is the word, matched whatever its case.
		const bytes = Buffer.from(hit?.snippet ?? "", "utf8");
		expect(hit?.highlights).toHaveLength(1);
		const [start, end] = hit?.highlights[0] ?? [0, 0];
		expect(bytes.subarray(start, end).toString("utf8")).toBe(pelican.toUpperCase());
		expect(hit?.marked).toContain(`<mark>${pelican.toUpperCase()}</mark>`);
		expect(hit?.marked).toContain("&lt;river&gt; &amp; the sea");
	});

	it("keeps every word, a phrase in order, either word with OR, and a phrase's last word as a prefix", async () => {
		const sid = await session();
		const [red, blue, green] = [w("red"), w("blue"), w("green")];
		const both = await client.append(sid, user(`${red} ${blue}`));
		const one = await client.append(sid, user(`${blue} then ${green}`));
		const ids = async (q: string) => (await client.search(q, { session: sid })).hits.map((h) => h.entry).sort();
		expect(await ids(`${red} ${blue}`)).toEqual([both]);
		expect(await ids(`"${blue} ${red}"`)).toEqual([]);
		expect(await ids(`"${red} ${blue}"`)).toEqual([both]);
		expect(await ids(`${red} OR ${green}`)).toEqual([both, one].sort());
		expect(await ids(`"${red} ${blue.slice(0, 6)}"*`)).toEqual([both]);
	});

	it("filters by session, entry type, role and time", async () => {
		const [a, b] = [await session(), await session()];
		const kiwi = w("kiwi");
		const fromUser = await client.append(a, user(`a ${kiwi}`));
		const fromAssistant = await client.append(a, assistant(`the ${kiwi} answer`));
		const summary = await client.append(a, { type: "branch_summary", fromId: fromUser, summary: `left the ${kiwi}` });
		const other = await client.append(b, user(`another ${kiwi}`));
		const ids = async (options: Parameters<typeof client.search>[1]) =>
			(await client.search(kiwi, options)).hits.map((h) => h.entry).sort();
		expect(await ids({})).toEqual([fromUser, fromAssistant, summary, other].sort());
		expect(await ids({ session: a })).toEqual([fromUser, fromAssistant, summary].sort());
		expect(await ids({ session: b })).toEqual([other]);
		expect(await ids({ types: ["user"] })).toEqual([fromUser, other].sort());
		expect(await ids({ types: ["assistant"], session: a })).toEqual([fromAssistant]);
		expect(await ids({ types: ["message"] })).toEqual([fromUser, fromAssistant, other].sort());
		expect(await ids({ types: ["branch_summary", "user"], session: a })).toEqual([fromUser, summary].sort());
		expect(await ids({ types: ["compaction"] })).toEqual([]);
		// grove stamps appends with the time now: all of them are since a day ago, none since 2999.
		expect(await ids({ since: "1d" })).toHaveLength(4);
		expect(await ids({ since: "2000-01-01" })).toHaveLength(4);
		expect(await ids({ since: "2999-01-01T00:00:00Z" })).toEqual([]);
	});

	it("says whether a hit is on its session's active path", async () => {
		const sid = await session();
		const [moth, lamp] = [w("moth"), w("lamp")];
		const [first, left] = await client.appendMany(sid, [user(`${moth} one`), user(`${moth} two`)]);
		await client.setLeaf(sid, first ?? null);
		const right = await client.append(sid, user(`${moth} ${lamp}`));
		const found = await client.search(moth, { session: sid });
		const active = Object.fromEntries(found.hits.map((h) => [h.entry, h.active]));
		expect(active).toEqual({ [first as string]: true, [left as string]: false, [right]: true });
	});

	it("gives at most limit hits, best first, and counts every match", async () => {
		const sid = await session();
		const owl = w("owl");
		await client.appendMany(sid, [
			user(`${owl}`),
			user(`${owl} ${owl} ${owl}`),
			user(`${owl} and many other words around it`),
			user(`an ${owl}`),
			user(`${owl} ${owl}`),
		]);
		const all = await client.search(owl);
		expect(all.total).toBe(5);
		expect(all.hits).toHaveLength(5);
		const scores = all.hits.map((h) => h.score);
		expect(scores).toEqual([...scores].sort((x, y) => y - x));
		const two = await client.search(owl, { limit: 2 });
		expect(two.total).toBe(5);
		expect(two.hits.map((h) => h.entry)).toEqual(all.hits.slice(0, 2).map((h) => h.entry));
		expect((await client.search(owl, { limit: 1000 })).hits).toHaveLength(5);
	});

	it("refuses a missing query, a bad time and a limit outside 1 to 1000; an unknown session is not_found", async () => {
		for (const [query, options] of [
			["", {}],
			["   ", {}],
			[w("x"), { limit: 0 }],
			[w("x"), { limit: 1001 }],
			[w("x"), { since: "yesterday" }],
		] as const) {
			const error = await rejection(client.search(query, options));
			expect([error.code, error.status]).toEqual(["invalid_argument", 400]);
		}
		const missing = await rejection(client.search(w("x"), { session: `no-such-${run}` }));
		expect([missing.code, missing.status]).toEqual(["not_found", 404]);
	});

	it("rejects with the signal's reason when aborted, before or while it runs", async () => {
		const before = new AbortController();
		before.abort();
		await expect(client.search(w("x"), { signal: before.signal })).rejects.toMatchObject({ name: "AbortError" });
		const during = new AbortController();
		const searching = client.search(w("x"), { signal: during.signal });
		const why = new Error("typed on");
		during.abort(why);
		await expect(searching).rejects.toBe(why);
		// An unaborted signal changes nothing.
		expect((await client.search(w("x"), { signal: new AbortController().signal })).hits).toEqual([]);
	});
});
