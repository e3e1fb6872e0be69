/**
 * pi 0.84's `SessionSearch` on grove: `GroveSessionSearch` (src/pi.ts, the v3 adapter's sessions)
 * and `GroveLaneSessionSearch` (src/pi-lanes.ts, 0.84's lane files), each against pi 0.84's own
 * `createScanningSessionSearch` reading the same sessions. On the run's server, or in this process
 * (GROVE_TRANSPORT=in-process).
 *
 * pi's scanning search matches a case-insensitive substring of the entry's JSON; grove matches
 * whole words of the entry's text. The two agree on single whole-word queries when no word is
 * part of another word, of a JSON key or of an id: every word here is an animal's name and this
 * run's tag (`pelicanx3f9…`), no word is a substring of another, and they are written in mixed
 * case. No entry has a label (pi's scanning search adds an entry's label to its text; grove
 * indexes a label as an entry of its own).
 */
import { randomUUID } from "node:crypto";
import * as pi from "pi-agent-core-084";
import type { Entry, JsonlSessionMetadata, ScanningReadable, Session, SessionSearch, SessionSearchHit } from "pi-agent-core-084";
import { afterAll, describe, expect, it } from "vitest";
import { GroveLaneSessionSearch, GrovePiLaneRepo } from "../src/pi-lanes.js";
import { GroveSessionSearch } from "../src/pi.js";
import type { PiSearchOptions } from "../src/pi-search.js";
import { testClient } from "./clients.js";

const client = testClient("pi-search-test");
afterAll(() => client.close());

const run = randomUUID().replaceAll("-", "").slice(0, 10);
/** The words: no one is a substring of another, of a JSON key or of an id. */
const [pelican, walrus, marmot, heron] = ["pelican", "walrus", "marmot", "heron"].map((base) => `${base}x${run}`) as [string, string, string, string];
const words = [pelican, walrus, marmot, heron];
/** `word` as written: capitalized, so both sides must match regardless of case. */
const cap = (word: string): string => word.charAt(0).toUpperCase() + word.slice(1);

async function hitsOf(search: SessionSearch, text: string, options?: PiSearchOptions): Promise<string[]> {
	const out: string[] = [];
	for await (const hit of search.search(text, options as Parameters<SessionSearch["search"]>[1])) out.push(`${hit.sessionId} ${hit.entryId}`);
	return out.sort();
}

/** Both searches find the same entries for every word and filter, and `limit` keeps that many of them. */
async function sameHits(grove: SessionSearch, scanning: SessionSearch, entryTypes: (readonly Entry["type"][] | undefined)[]): Promise<void> {
	let some = 0;
	for (const word of words) {
		for (const types of entryTypes) {
			const expected = await hitsOf(scanning, word, { entryTypes: types });
			expect(await hitsOf(grove, word, { entryTypes: types }), `${word} in ${types?.join(",") ?? "every type"}`).toEqual(expected);
			some += expected.length;
		}
		const all = await hitsOf(scanning, word);
		const two = await hitsOf(grove, word, { limit: 2 });
		expect(two).toHaveLength(Math.min(2, all.length));
		for (const hit of two) expect(all).toContain(hit);
	}
	expect(some).toBeGreaterThan(0);
	expect(await hitsOf(grove, pelican, { entryTypes: [] })).toEqual([]);
	expect(await hitsOf(grove, pelican, { limit: 0 })).toEqual([]);
	expect(await hitsOf(grove, "  ")).toEqual([]);
}

/** Both searches end as pi's does when aborted: before the first hit, and between two hits. */
async function abortsAsPi(search: SessionSearch): Promise<void> {
	const before = new AbortController();
	before.abort();
	await expect(hitsOf(search, pelican, { signal: before.signal })).rejects.toMatchObject({ name: "AbortError" });
	const between = new AbortController();
	const hits = search.search(pelican, { signal: between.signal })[Symbol.asyncIterator]();
	expect((await hits.next()).done).toBe(false);
	const why = new Error("typed on");
	between.abort(why);
	await expect(hits.next()).rejects.toBe(why);
}

function user(text: string) {
	return { role: "user", content: [{ type: "text", text }], timestamp: 1 };
}

function assistant(text: string) {
	return { role: "assistant", content: [{ type: "text", text }], timestamp: 2 };
}

describe("GroveSessionSearch (the v3 adapter's sessions)", () => {
	/** A pi 0.84 readable of a grove session for pi's scanning search: its entries, numbered from 1. */
	function readable(sid: string): ScanningReadable {
		return {
			getMetadata: async () => ({ id: sid, createdAt: 0 }),
			// Every entry from the cursor on (pi's scanning search filters the types itself).
			findEntries: async (query = {}) => {
				const after = query.cursor?.afterSeq ?? 0;
				const entries = await client.entries(sid, { after, limit: query.limit });
				return entries.map((entry, i) => ({ ...entry, seq: after + i + 1 })) as unknown as Entry[];
			},
			getLabel: async (id) => (await client.label(sid, id)) ?? undefined,
		};
	}

	let made: Promise<string[]> | undefined;

	/** Three grove sessions (made once): messages, custom entries, a custom message, a branch summary. */
	function sessions(): Promise<string[]> {
		made ??= make();
		return made;
	}

	async function make(): Promise<string[]> {
		const ids = [0, 1, 2].map((i) => `pi-search-${run}-${i}`);
		for (const id of ids) await client.createSession({ id });
		const [a, b, c] = ids as [string, string, string];
		const [question] = await client.appendMany(a, [
			user(`Where does the ${cap(pelican)} sleep?`),
			assistant(`The ${pelican} sleeps near the ${walrus}.`),
			{ type: "custom", customType: "note", data: { seen: [cap(marmot), heron] } },
		]);
		await client.appendMany(b, [user(`${walrus} and ${marmot}`), assistant(`${cap(heron)} only`), user(`a ${pelican} again`)]);
		await client.append(a, { type: "branch_summary", fromId: question, summary: `We left the ${heron} and the ${pelican}.` });
		await client.appendMany(c, [user(`the ${marmot}`), { type: "custom_message", customType: "hint", content: `${cap(walrus)}!`, display: true }]);
		return ids;
	}

	it("has pi 0.84's SessionSearch type and finds what pi's scanning search finds, on every filter", async () => {
		const ids = await sessions();
		const grove: SessionSearch = new GroveSessionSearch(client);
		const scanning = pi.createScanningSessionSearch(ids.map(readable));
		await sameHits(grove, scanning, [undefined, ["message"], ["custom"], ["branch_summary"], ["message", "branch_summary"], ["compaction"]]);
		// One session only, when asked.
		const one = new GroveSessionSearch(client, { session: ids[1] });
		expect(await hitsOf(one, pelican)).toEqual(await hitsOf(pi.createScanningSessionSearch([readable(ids[1] as string)]), pelican));
	});

	it("ends as pi's scanning search does when aborted", async () => {
		const ids = await sessions();
		await abortsAsPi(pi.createScanningSessionSearch(ids.map(readable)));
		await abortsAsPi(new GroveSessionSearch(client));
	});
});

describe("GroveLaneSessionSearch (pi 0.84's lane files)", () => {
	const prefix = `pl${run}`;
	const repo = new GrovePiLaneRepo<Session<JsonlSessionMetadata>, JsonlSessionMetadata>(client, pi, { prefix, cwd: "/work/search" });
	let made: Promise<Session<JsonlSessionMetadata>[]> | undefined;

	/** Two pi sessions on lanes: messages, a custom entry, a branch summary, another lane, a name. */
	function sessions(): Promise<Session<JsonlSessionMetadata>[]> {
		made ??= (async () => {
			const a = await repo.create({ id: `lanes-a-${run}` });
			const question = await a.appendMessage({ role: "user", content: `Where does the ${cap(pelican)} sleep?`, timestamp: 1 });
			await a.appendMessage({ role: "user", content: [{ type: "text", text: `near the ${walrus}` }], timestamp: 2 });
			await a.appendCustomEntry("note", { seen: [cap(marmot), heron] });
			await a.createLane("side", question);
			await a.view("side").appendMessage({ role: "user", content: `the ${heron} on the side`, timestamp: 3 });
			await a.appendEntry({ type: "branch_summary", id: `bs${run}`, fromId: question, summary: `left the ${pelican}` } as never, "main");
			await a.setName(`about the ${marmot}s`);
			const b = await repo.create({ id: `lanes-b-${run}` });
			await b.appendMessage({ role: "user", content: `${walrus} and ${cap(pelican)}`, timestamp: 4 });
			return [a, b];
		})();
		return made;
	}

	it("has pi 0.84's SessionSearch type and finds what pi's scanning search finds on pi's own sessions", async () => {
		const opened = await sessions();
		const grove: SessionSearch<SessionSearchHit> = new GroveLaneSessionSearch(client, prefix);
		const scanning = pi.createScanningSessionSearch(opened);
		await sameHits(grove, scanning, [undefined, ["message"], ["custom"], ["branch_summary"], ["message", "custom"], ["compaction"]]);
		// Another filesystem's sessions are not this one's.
		expect(await hitsOf(new GroveLaneSessionSearch(client, `${prefix}z`), pelican)).toEqual([]);
	});

	it("ends as pi's scanning search does when aborted", async () => {
		const opened = await sessions();
		await abortsAsPi(pi.createScanningSessionSearch(opened));
		await abortsAsPi(new GroveLaneSessionSearch(client, prefix));
	});
});
