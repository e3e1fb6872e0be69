/**
 * The differential run: one random sequence of operations applied to pi's own
 * InMemorySessionStorage/InMemorySessionRepo and to a grove backend, every read of the
 * `SessionStorage` contract (and `Session.getBranch`/`buildContext`) compared after each step.
 *
 * Ids made by `createEntryId` and leaf records differ between the sides; both sides' ids are
 * named by log position before comparing (`#i`), and leaf records' timestamps (the server's
 * clock) are blanked. Every other byte is compared. The clock (`Date`) is pinned per step so
 * both sides stamp the same times.
 */
import {
	InMemorySessionRepo as PiRepo,
	InMemorySessionStorage as PiStorage,
	Session,
	type SessionMetadata,
	type SessionRepo,
	type SessionStorage,
	type SessionTreeEntry,
} from "@earendil-works/pi-agent-core";
import { expect, vi } from "vitest";
import { ENTRY_TYPES, entryBody, LABEL_TEXTS, LEAF, materialize, message, NAME_TEXTS, type Picker, ref } from "./entries.js";
import { Rand } from "./random.js";

export type Repo = SessionRepo<SessionMetadata, { id?: string }, void>;

export interface Backend {
	name: string;
	repo(scope: string): Repo;
	/** A storage outside the repo, holding `entries` when given. */
	storage(options: { metadata: SessionMetadata; entries?: SessionTreeEntry[]; scope: string }): Promise<SessionStorage>;
}

interface Side {
	session: Session;
	log: SessionTreeEntry[];
}

interface Pair {
	label: string;
	meta: SessionMetadata;
	inRepo: boolean;
	pi: Side;
	gr: Side;
}

type Outcome = { ok: unknown } | { error: { name: string; code: unknown; message: string } };

async function outcome(run: () => Promise<unknown>): Promise<Outcome> {
	try {
		return { ok: await run() };
	} catch (error) {
		const e = error as { name?: string; code?: unknown; message?: string };
		return { error: { name: e.name ?? "?", code: e.code, message: e.message ?? String(error) } };
	}
}

/**
 * Replaces each id `names` knows by its name, in `value`; in an error message, each word that
 * is an id.
 */
function canon(value: unknown, names: ReadonlyMap<string, string>): unknown {
	const walk = (inner: unknown, key?: string): unknown => {
		if (typeof inner === "string") {
			if (key === "message") return inner.replace(/[^\s:]+/g, (word) => names.get(word) ?? word);
			return names.get(inner) ?? inner;
		}
		if (Array.isArray(inner)) return inner.map((item) => walk(item));
		if (inner !== null && typeof inner === "object") {
			const out: Record<string, unknown> = {};
			for (const [field, item] of Object.entries(inner)) out[field] = walk(item, field);
			if (out.type === "leaf" && "targetId" in out) out.timestamp = "<leaf time>";
			return out;
		}
		return inner;
	};
	return walk(value);
}

const CLOCK_START = Date.UTC(2026, 0, 1);

export class DifferentialRun {
	private readonly r: Rand;
	private readonly piRepo = new PiRepo();
	private readonly grRepo: Repo;
	private readonly scope: string;
	private pairs: Pair[] = [];
	private deleted: SessionMetadata[] = [];
	private trace: string[] = [];
	/** Each side's ids by name: `SESSION#POSITION` where the id was first seen in a log. */
	private readonly piNames = new Map<string, string>();
	private readonly grNames = new Map<string, string>();
	private step = 0;
	private sessions = 0;

	constructor(
		private readonly backend: Backend,
		private readonly seed: number,
	) {
		this.r = new Rand(seed * 2654435761 + 17);
		this.scope = `/diff/${backend.name}/${seed}/${process.pid}`;
		this.grRepo = backend.repo(this.scope);
	}

	async run(steps: number): Promise<void> {
		vi.useFakeTimers({ toFake: ["Date"] });
		try {
			this.tick();
			await this.createStandalone();
			await this.createInRepo();
			for (let i = 0; i < steps; i++) {
				this.tick();
				await this.operation();
			}
		} finally {
			vi.useRealTimers();
		}
	}

	private tick(): void {
		this.step++;
		vi.setSystemTime(CLOCK_START + this.seed * 10_000_000 + this.step * 1000);
	}

	private context(what: string): string {
		return `${this.backend.name} seed ${this.seed} step ${this.step}: ${what}\nlast operations:\n  ${this.trace.slice(-12).join("\n  ")}`;
	}

	private note(text: string): void {
		this.trace.push(`${this.step} ${text}`);
	}

	private newId(): string {
		return `${this.backend.name}-${this.seed}-${process.pid}-${this.sessions++}`;
	}

	private picker(pair: Pair): Picker {
		const log = pair.pi.log;
		const positions = (keep: (entry: SessionTreeEntry) => boolean): number[] =>
			log.flatMap((entry, i) => (keep(entry) ? [i] : []));
		return {
			entry: () => {
				const found = positions((entry) => entry.type !== "leaf");
				return found.length ? this.r.pick(found) : undefined;
			},
			any: () => (log.length ? this.r.int(log.length) : undefined),
			userMessage: () => {
				const found = positions((entry) => entry.type === "message" && entry.message.role === "user");
				return found.length ? this.r.pick(found) : undefined;
			},
		};
	}

	/** Runs `action` on both sides with the templates resolved per side, then checks the pair. */
	private async both(pair: Pair, what: string, action: (side: Side, resolve: <T>(t: T) => T) => Promise<unknown>): Promise<void> {
		this.note(`${pair.label}: ${what}`);
		const resolver = async (side: Side) => {
			const leaf = await side.session.getLeafId();
			const ids = side.log.map((entry) => entry.id);
			return <T>(template: T): T => materialize(template, ids, leaf);
		};
		const piResult = await outcome(async () => action(pair.pi, await resolver(pair.pi)));
		const grResult = await outcome(async () => action(pair.gr, await resolver(pair.gr)));
		await this.check(pair);
		expect(canon(grResult, this.grNames), this.context(`result of ${what}`)).toEqual(canon(piResult, this.piNames));
	}

	private async createStandalone(entries?: Pair): Promise<void> {
		const meta: SessionMetadata = { id: `standalone-${this.newId()}`, createdAt: new Date().toISOString() };
		const piStorage = entries ? new PiStorage({ metadata: meta, entries: entries.pi.log }) : new PiStorage({ metadata: meta });
		const grStorage = await this.backend.storage({ metadata: meta, entries: entries?.gr.log, scope: `${this.scope}/standalone` });
		const pair: Pair = {
			label: meta.id,
			meta,
			inRepo: false,
			pi: { session: new Session(piStorage), log: [] },
			gr: { session: new Session(grStorage), log: [] },
		};
		this.note(`storage ${meta.id}${entries ? ` with the ${entries.pi.log.length} entries of ${entries.label}` : ""}`);
		this.pairs.push(pair);
		await this.check(pair);
	}

	private async createInRepo(): Promise<void> {
		const id = this.r.bool(0.9) ? this.newId() : undefined;
		this.note(`repo.create ${id ?? "(no id)"}`);
		const pi = await this.piRepo.create(id === undefined ? {} : { id });
		const gr = await this.grRepo.create(id === undefined ? {} : { id });
		const piMeta = await pi.getMetadata();
		const grMeta = await gr.getMetadata();
		if (id === undefined) {
			// Each side made its own id: the pair is used for session operations, not repo calls.
			expect(grMeta.createdAt, this.context("created metadata")).toBe(piMeta.createdAt);
			const pair: Pair = { label: `${piMeta.id}|${grMeta.id}`, meta: piMeta, inRepo: false, pi: { session: pi, log: [] }, gr: { session: gr, log: [] } };
			this.pairs.push(pair);
			await this.check(pair);
			return;
		}
		expect(grMeta, this.context("created metadata")).toEqual(piMeta);
		const pair: Pair = { label: id, meta: piMeta, inRepo: true, pi: { session: pi, log: [] }, gr: { session: gr, log: [] } };
		this.pairs.push(pair);
		await this.check(pair);
	}

	private async operation(): Promise<void> {
		const pair = this.r.pick(this.pairs);
		const pick = this.picker(pair);
		const kind = this.r.weighted({
			exact: 30,
			message: 10,
			label: 5,
			name: 4,
			moveTo: 6,
			setLeaf: 5,
			compaction: 4,
			misc: 5,
			create: 2,
			open: 3,
			list: 2,
			remove: 1,
			fork: 6,
			reload: 2,
		});
		switch (kind) {
			case "exact": {
				const type = this.r.pick(ENTRY_TYPES);
				const body = entryBody(this.r, type, pick);
				if (body === undefined) return;
				const parentRoll = this.r.next();
				const parent = parentRoll < 0.75 ? LEAF : parentRoll < 0.9 ? pick.entry() : undefined;
				const template = {
					type,
					id: this.r.hex(8),
					parentId: parent === undefined ? null : typeof parent === "number" ? ref(parent) : parent,
					timestamp: new Date(Date.now() - this.r.int(1000)).toISOString(),
					...body,
				};
				await this.both(pair, `appendEntry ${type} ${JSON.stringify(template)}`, (side, resolve) =>
					side.session.getStorage().appendEntry(resolve(template) as unknown as SessionTreeEntry),
				);
				return;
			}
			case "message": {
				const msg = message(this.r);
				await this.both(pair, `appendMessage ${msg.role}`, (side) => side.session.appendMessage(msg as never));
				return;
			}
			case "label": {
				const target = this.r.bool(0.9) ? pick.any() : undefined;
				const text = this.r.pick(LABEL_TEXTS);
				const targetRef = target === undefined ? "missing" : ref(target);
				await this.both(pair, `appendLabel ${targetRef} ${JSON.stringify(text)}`, (side, resolve) =>
					side.session.appendLabel(resolve(targetRef), text),
				);
				return;
			}
			case "name": {
				const name = this.r.pick(NAME_TEXTS) ?? "";
				await this.both(pair, `appendSessionName ${JSON.stringify(name)}`, (side) => side.session.appendSessionName(name));
				return;
			}
			case "moveTo": {
				const roll = this.r.next();
				const target = roll < 0.75 ? pick.entry() : undefined;
				const targetRef = target !== undefined ? ref(target) : roll < 0.9 ? null : "missing";
				const summary = this.r.bool(0.4)
					? { summary: this.r.bool(0.8) ? `summary ${this.r.hex(4)}` : "", details: this.r.bool() ? { a: 1 } : undefined, fromHook: this.r.bool(0.3) || undefined }
					: undefined;
				await this.both(pair, `moveTo ${targetRef} ${JSON.stringify(summary)}`, (side, resolve) =>
					side.session.moveTo(resolve(targetRef), summary),
				);
				return;
			}
			case "setLeaf": {
				const roll = this.r.next();
				const target = roll < 0.7 ? pick.entry() : undefined;
				const targetRef = target !== undefined ? ref(target) : roll < 0.85 ? null : `unknown-${this.r.hex(4)}`;
				await this.both(pair, `setLeafId ${targetRef}`, (side, resolve) => side.session.getStorage().setLeafId(resolve(targetRef)));
				return;
			}
			case "compaction": {
				const kept = this.r.bool(0.7) ? pick.entry() : undefined;
				const keptRef = kept === undefined ? undefined : ref(kept);
				const tail = this.r.bool(0.5) ? [message(this.r, "user"), message(this.r, "assistant")] : undefined;
				const usage = this.r.bool(0.5)
					? { input: 1, output: 2, cacheRead: 3, cacheWrite: 4, totalTokens: 10, cost: { input: 0.01, output: 0.02, cacheRead: 0.03, cacheWrite: 0.04, total: 0.1 } }
					: undefined;
				await this.both(pair, `appendCompaction kept=${keptRef} tail=${tail !== undefined}`, (side, resolve) =>
					side.session.appendCompaction(`compacted ${this.step}`, resolve(keptRef), 1234, { files: [] }, false, usage, tail as never),
				);
				return;
			}
			case "misc": {
				const which = this.r.int(5);
				const arg = this.r.hex(4);
				const display = this.r.bool();
				await this.both(pair, `misc ${which}`, (side) => {
					const s = side.session;
					if (which === 0) return s.appendModelChange("openai", `gpt-${arg}`);
					if (which === 1) return s.appendThinkingLevelChange(display ? "high" : "off");
					if (which === 2) return s.appendCustomEntry("ext", display ? { arg } : undefined);
					if (which === 3) return s.appendCustomMessageEntry("note", display ? `text ${arg}` : [{ type: "text", text: arg }], display, { arg });
					return s.appendActiveToolsChange(display ? ["read", "bash"] : []);
				});
				return;
			}
			case "create":
				await this.createInRepo();
				return;
			case "open":
				await this.open();
				return;
			case "list":
				await this.list();
				return;
			case "remove":
				await this.remove();
				return;
			case "fork":
				await this.fork();
				return;
			case "reload":
				await this.createStandalone(pair);
				return;
		}
	}

	private async open(): Promise<void> {
		const roll = this.r.next();
		const repoPairs = this.pairs.filter((pair) => pair.inRepo);
		let meta: SessionMetadata;
		let pair: Pair | undefined;
		if (roll < 0.6 && repoPairs.length > 0) {
			pair = this.r.pick(repoPairs);
			meta = pair.meta;
		} else if (roll < 0.75 && this.deleted.length > 0) {
			meta = this.r.pick(this.deleted);
		} else if (roll < 0.9) {
			// A storage made outside the repo is not in it.
			const standalone = this.pairs.filter((p) => p.label.startsWith("standalone-"));
			meta = standalone.length > 0 ? this.r.pick(standalone).meta : { id: "standalone-none", createdAt: "x" };
		} else {
			meta = { id: `unknown-${this.r.hex(6)}`, createdAt: new Date().toISOString() };
		}
		this.note(`repo.open ${meta.id}`);
		const piResult = await outcome(() => this.piRepo.open(meta));
		const grResult = await outcome(() => this.grRepo.open(meta));
		if ("ok" in piResult && "ok" in grResult && pair !== undefined) {
			const piMeta = await (piResult.ok as Session).getMetadata();
			const grMeta = await (grResult.ok as Session).getMetadata();
			expect(grMeta, this.context("opened metadata")).toEqual(piMeta);
			pair.pi.session = piResult.ok as Session;
			pair.gr.session = grResult.ok as Session;
			await this.check(pair);
			return;
		}
		const shape = (o: Outcome) => ("ok" in o ? "opened" : o.error);
		expect(shape(grResult), this.context(`repo.open ${meta.id}`)).toEqual(shape(piResult));
	}

	private async list(): Promise<void> {
		this.note("repo.list");
		const sorted = (list: SessionMetadata[]) => [...list].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
		const pi = sorted(await this.piRepo.list());
		const gr = sorted(await this.grRepo.list());
		// Sessions created without an id got each side's own id: compare those by count.
		const named = (list: SessionMetadata[]) => list.filter((m) => m.id.startsWith(this.backend.name));
		expect(named(gr), this.context("repo.list")).toEqual(named(pi));
		expect(gr.length, this.context("repo.list length")).toBe(pi.length);
	}

	private async remove(): Promise<void> {
		const repoPairs = this.pairs.filter((pair) => pair.inRepo);
		if (repoPairs.length === 0) return;
		const pair = this.r.pick(repoPairs);
		this.note(`repo.delete ${pair.meta.id}`);
		await this.piRepo.delete(pair.meta);
		await this.grRepo.delete(pair.meta);
		this.pairs = this.pairs.filter((p) => p !== pair);
		this.deleted.push(pair.meta);
		if (this.pairs.length === 0) await this.createInRepo();
	}

	private async fork(): Promise<void> {
		const roll = this.r.next();
		const repoPairs = this.pairs.filter((pair) => pair.inRepo);
		const source = roll < 0.9 && repoPairs.length > 0 ? this.r.pick(repoPairs) : undefined;
		const sourceMeta = source?.meta ?? (this.deleted.length > 0 && this.r.bool() ? this.r.pick(this.deleted) : { id: `unknown-${this.r.hex(4)}`, createdAt: "x" });
		const pick = source ? this.picker(source) : undefined;
		const targetRoll = this.r.next();
		let entryRef: string | undefined;
		if (pick && targetRoll < 0.4) entryRef = ((p) => (p === undefined ? undefined : ref(p)))(pick.userMessage());
		else if (pick && targetRoll < 0.7) entryRef = ((p) => (p === undefined ? undefined : ref(p)))(pick.entry());
		else if (targetRoll < 0.8) entryRef = `missing-${this.r.hex(4)}`;
		const position = this.r.pick(["before", "at", undefined] as const);
		const id = this.newId();
		const what = `repo.fork ${sourceMeta.id} entry=${entryRef} position=${position} id=${id}`;
		this.note(what);
		const options = (ids: readonly string[]) => {
			const o: { entryId?: string; position?: "before" | "at"; id: string } = { id };
			if (entryRef !== undefined) o.entryId = materialize(entryRef, ids, null);
			if (position !== undefined) o.position = position;
			return o;
		};
		const piResult = await outcome(() => this.piRepo.fork(sourceMeta, options(source?.pi.log.map((e) => e.id) ?? [])));
		const grResult = await outcome(() => this.grRepo.fork(sourceMeta, options(source?.gr.log.map((e) => e.id) ?? [])));
		if ("ok" in piResult && "ok" in grResult) {
			const pi = piResult.ok as Session;
			const gr = grResult.ok as Session;
			expect(await gr.getMetadata(), this.context(`${what}: metadata`)).toEqual(await pi.getMetadata());
			const pair: Pair = { label: id, meta: await pi.getMetadata(), inRepo: true, pi: { session: pi, log: [] }, gr: { session: gr, log: [] } };
			this.pairs.push(pair);
			await this.check(pair);
			return;
		}
		const canonError = (o: Outcome, names: ReadonlyMap<string, string>) => ("ok" in o ? "forked" : canon(o.error, names));
		expect(canonError(grResult, this.grNames), this.context(what)).toEqual(canonError(piResult, this.piNames));
	}

	/** Every read of the contract, on both sides, compared. */
	private async check(pair: Pair): Promise<void> {
		const piStorage = pair.pi.session.getStorage();
		const grStorage = pair.gr.session.getStorage();
		pair.pi.log = await piStorage.getEntries();
		pair.gr.log = await grStorage.getEntries();
		const register = (log: readonly SessionTreeEntry[], names: Map<string, string>) =>
			log.forEach((entry, i) => {
				if (!names.has(entry.id)) names.set(entry.id, `${pair.label}#${i}`);
			});
		register(pair.pi.log, this.piNames);
		register(pair.gr.log, this.grNames);
		const same = async (what: string, read: (side: Side, storage: SessionStorage) => Promise<unknown>) => {
			const pi = canon(await outcome(() => read(pair.pi, piStorage)), this.piNames);
			const gr = canon(await outcome(() => read(pair.gr, grStorage)), this.grNames);
			expect(gr, this.context(`${pair.label}: ${what}`)).toEqual(pi);
		};
		expect(canon(pair.gr.log, this.grNames), this.context(`${pair.label}: getEntries()`)).toEqual(canon(pair.pi.log, this.piNames));
		const n = pair.pi.log.length;
		const pick = this.picker(pair);
		const idAt = (side: Side, position: number | undefined) => (position === undefined ? "nope" : side.log[position]!.id);
		await same("getLeafId", (_, s) => s.getLeafId());
		// A session created without an id has each side's own id.
		const anonymous = pair.label.includes("|");
		await same("getMetadata", async (_, s) => {
			const metadata = await s.getMetadata();
			return anonymous ? { ...metadata, id: "<own id>" } : metadata;
		});
		for (let i = 0; i < 2; i++) {
			const after = this.r.bool(0.2) ? undefined : this.r.int(n + 2);
			const limit = this.r.bool(0.4) ? undefined : this.r.int(n + 2);
			const cursor: { afterEntrySeq?: number; limit?: number } = {};
			if (after !== undefined) cursor.afterEntrySeq = after;
			if (limit !== undefined) cursor.limit = limit;
			await same(`getEntries(${JSON.stringify(cursor)})`, (_, s) => s.getEntries(cursor));
		}
		const anyPos = pick.any();
		await same(`getEntry(#${anyPos})`, (side, s) => s.getEntry(idAt(side, anyPos)));
		await same("getEntry(nope)", (_, s) => s.getEntry("nope"));
		const type = this.r.pick(ENTRY_TYPES);
		await same(`findEntries(${type})`, (_, s) => s.findEntries(type));
		const labelTargets = new Set<number>();
		if (anyPos !== undefined) labelTargets.add(anyPos);
		pair.pi.log.forEach((entry) => {
			if (entry.type === "label") {
				const at = pair.pi.log.findIndex((e) => e.id === entry.targetId);
				if (at >= 0) labelTargets.add(at);
			}
		});
		for (const at of [...labelTargets].slice(0, 6)) await same(`getLabel(#${at})`, (side, s) => s.getLabel(idAt(side, at)));
		await same("getSessionName", (_, s) => s.getSessionName());
		await same("getSessionStats", (_, s) => s.getSessionStats());
		const from = pick.entry();
		await same(`getPathToRootOrCompaction(#${from})`, (side, s) => s.getPathToRootOrCompaction(idAt(side, from)));
		await same("getPathToRootOrCompaction(null)", (_, s) => s.getPathToRootOrCompaction(null));
		await same("Session.getBranch()", (side) => side.session.getBranch());
		await same("Session.buildContext()", (side) => side.session.buildContext());
	}
}
