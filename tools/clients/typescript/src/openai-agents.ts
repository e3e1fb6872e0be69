/**
 * The OpenAI Agents SDK's session memory on grove: `GroveSession` implements the SDK's `Session`
 * interface (`getSessionId`, `getItems`, `addItems`, `popItem`, `clearSession`) on one grove
 * session, with named branches that persist. It is the TypeScript twin of the Python client's
 * `grove_client.openai_agents.GroveSession`, and stores sessions the same way, so either
 * client reads what the other wrote (docs/openai-agents.md is the mapping).
 *
 * It may call only grove, through `GroveClient`; it imports nothing of the SDK at run time (the
 * interface is structural: `run(agent, input, { session: new GroveSession(...) })`).
 *
 * - An SDK session is the grove session `oa-` + the hex of its id's UTF-8 bytes (`oa.` + the
 *   SHA-256 of the id when that would be too long).
 * - An item is a `custom` entry (`customType` `openai.agents.item`, the item as `data`), a child
 *   of the item before it; `addItems` appends its items as one chain, atomically.
 * - The history is the items on the active path; `popItem` and `clearSession` move the leaf back
 *   and never delete.
 * - A branch is a name for a tip: each switch writes one leaf record naming the branch it goes
 *   to and the branch it leaves with its tip then (`{"openaiAgents": {"branch", "left"}}`).
 */
import { createHash, randomBytes } from "node:crypto";
import type { AgentInputItem, Session } from "@openai/agents";
import type { GroveClient } from "./client.js";
import { GroveError } from "./errors.js";
import type { WireEntry } from "./types.js";

/** The `customType` of an item entry. */
export const ITEM = "openai.agents.item";
/** The field of a leaf record this module writes. */
const FIELD = "openaiAgents";
/** The branch a session starts on. */
export const MAIN = "main";
/** The longest grove session id made of an SDK id's hex. */
const LONGEST_ID = 256;

/** The grove session of an SDK session id. */
export function sessionOf(sdkSessionId: string): string {
	const hex = Buffer.from(sdkSessionId, "utf8").toString("hex");
	if (hex.length + 3 <= LONGEST_ID) return `oa-${hex}`;
	return `oa.${createHash("sha256").update(sdkSessionId, "utf8").digest("hex")}`;
}

function isItem(entry: WireEntry): boolean {
	return entry.type === "custom" && entry.customType === ITEM;
}

function isUserMessage(item: unknown): boolean {
	return typeof item === "object" && item !== null && (item as { role?: unknown }).role === "user";
}

function textOf(item: unknown): string {
	const content = (item as { content?: unknown }).content;
	if (typeof content === "string") return content;
	if (Array.isArray(content)) {
		return content
			.map((part) => (typeof part === "object" && part !== null ? String((part as { text?: unknown }).text ?? "") : ""))
			.join(" ");
	}
	return "";
}

/** The branches as the leaf history tells them: the current one and the other branches' tips. */
export interface Branches {
	current: string;
	tips: Map<string, string | null>;
}

/** A branch as `listBranches` gives it. */
export interface BranchInfo {
	branchId: string;
	tip: string | null;
	isCurrent: boolean;
	messageCount: number;
	userTurns: number;
}

export interface GroveSessionOptions {
	/** The session's working directory, kept in its header. */
	cwd?: string;
	/** The default `limit` of `getItems`. */
	limit?: number;
}

/**
 * The Agents SDK's `Session` on a grove session, with branches that persist. Its writes are
 * serialized in this object; like the SDK's own sessions it expects one writer at a time.
 */
export class GroveSession implements Session {
	readonly client: GroveClient;
	readonly sessionId: string;
	readonly groveSessionId: string;
	private readonly options: GroveSessionOptions;
	private exists = false;
	private queue: Promise<unknown> = Promise.resolve();

	constructor(sessionId: string, client: GroveClient, options: GroveSessionOptions = {}) {
		this.sessionId = sessionId;
		this.groveSessionId = sessionOf(sessionId);
		this.client = client;
		this.options = options;
	}

	async getSessionId(): Promise<string> {
		return this.sessionId;
	}

	/** The items of the history, root first; with `limit`, the latest `limit` of them. */
	async getItems(limit?: number): Promise<AgentInputItem[]> {
		const items = (await this.path(undefined)).filter(isItem).map((entry) => entry.data as AgentInputItem);
		const bound = limit ?? this.options.limit;
		if (bound === undefined) return items;
		if (bound <= 0) return [];
		return items.slice(-bound);
	}

	/** Appends the items after the last one, as one chain, atomically. */
	addItems(items: AgentInputItem[]): Promise<void> {
		if (items.length === 0) return Promise.resolve();
		return this.serial(async () => {
			await this.ensure();
			await this.client.appendMany(
				this.groveSessionId,
				items.map((item) => ({ type: "custom", customType: ITEM, data: item })),
			);
		});
	}

	/** Takes the latest item off the history and returns it; the leaf moves to its parent. */
	popItem(): Promise<AgentInputItem | undefined> {
		return this.serial(async () => {
			const path = await this.path(undefined);
			for (let i = path.length - 1; i >= 0; i--) {
				const entry = path[i]!;
				if (!isItem(entry)) continue;
				await this.client.setLeaf(this.groveSessionId, entry.parentId);
				return entry.data as AgentInputItem;
			}
			return undefined;
		});
	}

	/** Empties the history: back to the root position on `main`; other branch names are forgotten. */
	clearSession(): Promise<void> {
		return this.serial(async () => {
			if (!(await this.present())) return;
			await this.move(null, { branch: MAIN, cleared: true });
		});
	}

	/** The current branch and the other branches' tips, from the session's leaf history. */
	async branches(): Promise<Branches> {
		const state: Branches = { current: MAIN, tips: new Map() };
		if (!(await this.present())) return state;
		for await (const record of this.client.iterLog(this.groveSessionId, { type: "leaf" })) {
			const mark = record[FIELD] as { branch?: unknown; cleared?: unknown; left?: { branch?: unknown; tip?: unknown } } | undefined;
			if (typeof mark !== "object" || mark === null || typeof mark.branch !== "string") continue;
			if (mark.cleared) state.tips.clear();
			if (typeof mark.left?.branch === "string") {
				state.tips.set(mark.left.branch, typeof mark.left.tip === "string" ? mark.left.tip : null);
			}
			state.current = mark.branch;
			state.tips.delete(state.current);
		}
		return state;
	}

	async currentBranchId(): Promise<string> {
		return (await this.branches()).current;
	}

	/** Every branch, the current one first, then by name. */
	async listBranches(): Promise<BranchInfo[]> {
		const state = await this.branches();
		const leaf = (await this.present()) ? await this.client.leaf(this.groveSessionId) : null;
		const tips: [string, string | null, boolean][] = [[state.current, leaf, true]];
		for (const name of [...state.tips.keys()].sort()) tips.push([name, state.tips.get(name) ?? null, false]);
		const listed: BranchInfo[] = [];
		for (const [branchId, tip, isCurrent] of tips) {
			const items = tip === null ? [] : (await this.path(tip)).filter(isItem).map((entry) => entry.data);
			listed.push({ branchId, tip, isCurrent, messageCount: items.length, userTurns: items.filter(isUserMessage).length });
		}
		return listed;
	}

	/**
	 * Makes a branch holding the history before the `turn`-th user message (from 1) of the current
	 * branch and switches to it; returns its name (default `branch_from_turn_N_TIME`).
	 */
	createBranchFromTurn(turn: number, name?: string): Promise<string> {
		return this.serial(async () => {
			let seen = 0;
			for (const entry of await this.path(undefined)) {
				if (isItem(entry) && isUserMessage(entry.data) && ++seen === turn) {
					return this.branchAt(entry.parentId, name ?? `branch_from_turn_${turn}_${Math.floor(Date.now() / 1000)}`);
				}
			}
			throw new Error(`session ${this.sessionId}: there is no user turn ${turn} on the current branch (${seen} turns)`);
		});
	}

	/** `createBranchFromTurn` at the first user message whose text contains `search`. */
	async createBranchFromContent(search: string, name?: string): Promise<string> {
		let turn = 0;
		for (const item of await this.getItems()) {
			if (!isUserMessage(item)) continue;
			turn++;
			if (textOf(item).includes(search)) return this.createBranchFromTurn(turn, name);
		}
		throw new Error(`session ${this.sessionId}: no user message contains ${JSON.stringify(search)}`);
	}

	/** Makes `branchId` the current branch. */
	switchToBranch(branchId: string): Promise<void> {
		return this.serial(async () => {
			const state = await this.branches();
			if (branchId === state.current) return;
			if (!state.tips.has(branchId)) {
				const known = [state.current, ...[...state.tips.keys()].sort()].join(", ");
				throw new Error(`session ${this.sessionId}: no branch ${JSON.stringify(branchId)} (branches: ${known})`);
			}
			await this.move(state.tips.get(branchId) ?? null, { branch: branchId, left: await this.leaving(state) });
		});
	}

	// Internals

	/** Runs `work` after this object's earlier writes. */
	private serial<T>(work: () => Promise<T>): Promise<T> {
		const next = this.queue.then(work, work);
		this.queue = next.catch(() => undefined);
		return next;
	}

	private async branchAt(tip: string | null, name: string): Promise<string> {
		const state = await this.branches();
		if (name === state.current || state.tips.has(name)) {
			throw new Error(`session ${this.sessionId}: a branch ${JSON.stringify(name)} exists already`);
		}
		await this.move(tip, { branch: name, left: await this.leaving(state) });
		return name;
	}

	private async leaving(state: Branches): Promise<{ branch: string; tip: string | null }> {
		return { branch: state.current, tip: await this.client.leaf(this.groveSessionId) };
	}

	/** Moves the leaf to `target` with a leaf record carrying `mark`. */
	private async move(target: string | null, mark: Record<string, unknown>): Promise<void> {
		await this.ensure();
		const sid = this.groveSessionId;
		await this.client.appendExact(sid, {
			type: "leaf",
			id: randomBytes(8).toString("hex"),
			parentId: await this.client.leaf(sid),
			timestamp: new Date().toISOString(),
			targetId: target,
			[FIELD]: mark,
		});
	}

	/** The entries from the root to `start` (default the leaf); none for a session not made yet. */
	private async path(start: string | undefined): Promise<WireEntry[]> {
		try {
			return await this.client.path(this.groveSessionId, start);
		} catch (error) {
			if (error instanceof GroveError && error.code === "not_found" && start === undefined && !(await this.present())) {
				return [];
			}
			throw error;
		}
	}

	private async present(): Promise<boolean> {
		if (this.exists) return true;
		this.exists = await this.client.sessionExists(this.groveSessionId);
		return this.exists;
	}

	/** Makes the grove session when it is not there yet (another maker racing is fine). */
	private async ensure(): Promise<void> {
		if (await this.present()) return;
		try {
			await this.client.createSession({
				id: this.groveSessionId,
				cwd: this.options.cwd,
				metadata: { openaiAgents: { sessionId: this.sessionId } },
			});
		} catch (error) {
			if (!(error instanceof GroveError && error.code === "invalid_argument" && (await this.client.sessionExists(this.groveSessionId)))) {
				throw error;
			}
		}
		this.exists = true;
	}
}
