/**
 * Random pi entries and messages for the differential test. References to other entries are
 * written as `ref(i)` (the entry at log position i) or `LEAF` (the side's leaf) and resolved per
 * side by `materialize`, since ids made by createEntryId differ between the two storages.
 */
import type { Rand } from "./random.js";

const REF = "\u0000ref:";
export const LEAF = "\u0000leaf";

export function ref(position: number): string {
	return `${REF}${position}`;
}

/** Replaces every `ref(i)` with `ids[i]` and `LEAF` with `leaf`. */
export function materialize<T>(template: T, ids: readonly string[], leaf: string | null): T {
	const walk = (value: unknown): unknown => {
		if (typeof value === "string") {
			if (value === LEAF) return leaf;
			if (value.startsWith(REF)) {
				const id = ids[Number(value.slice(REF.length))];
				if (id === undefined) throw new Error(`no entry at ${value.slice(REF.length)}`);
				return id;
			}
			return value;
		}
		if (Array.isArray(value)) return value.map(walk);
		if (value !== null && typeof value === "object") {
			const out: Record<string, unknown> = {};
			for (const [key, inner] of Object.entries(value)) out[key] = walk(inner);
			return out;
		}
		return value;
	};
	return walk(template) as T;
}

export interface Picker {
	/** A log position of an entry that is not a leaf record, or undefined when there is none. */
	entry(): number | undefined;
	/** A log position of any entry or leaf record. */
	any(): number | undefined;
	/** A log position of a user message, if any. */
	userMessage(): number | undefined;
}

function usage(r: Rand): Record<string, unknown> {
	const input = r.int(1000);
	const output = r.int(1000);
	const cacheRead = r.int(100);
	const cacheWrite = r.int(100);
	const cost = {
		input: input / 1000,
		output: output / 500,
		cacheRead: cacheRead / 10000,
		cacheWrite: cacheWrite / 2000,
		total: 0,
	};
	cost.total = cost.input + cost.output + cost.cacheRead + cost.cacheWrite;
	return { input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite, cost };
}

function text(r: Rand, prefix: string): string {
	return r.pick([`${prefix} ${r.hex(4)}`, `${prefix} ünïcødé ✓ ${r.hex(2)}`, `${prefix}\nwith\ttabs "quotes" \\ ${r.hex(3)}`]);
}

/** A random pi message (user, assistant or tool result). */
export function message(r: Rand, role?: "user" | "assistant" | "toolResult"): Record<string, unknown> {
	const kind = role ?? r.pick(["user", "user", "assistant", "assistant", "toolResult"] as const);
	const timestamp = 1_700_000_000_000 + r.int(1_000_000);
	if (kind === "user") {
		return {
			role: "user",
			content: r.bool() ? text(r, "question") : [{ type: "text", text: text(r, "question") }],
			timestamp,
		};
	}
	if (kind === "assistant") {
		const content: unknown[] = [{ type: "text", text: text(r, "answer") }];
		if (r.bool(0.3)) content.push({ type: "toolCall", id: `call_${r.hex(6)}`, name: "read", arguments: { path: "a.txt" } });
		return {
			role: "assistant",
			content,
			api: "anthropic-messages",
			provider: r.pick(["anthropic", "openai"]),
			model: r.pick(["claude-sonnet-4-5", "gpt-5"]),
			usage: usage(r),
			stopReason: "stop",
			timestamp,
		};
	}
	return {
		role: "toolResult",
		toolCallId: `call_${r.hex(6)}`,
		toolName: "read",
		content: [{ type: "text", text: text(r, "file") }],
		isError: r.bool(0.2),
		timestamp,
	};
}

export const LABEL_TEXTS = ["checkpoint", "", "   ", "  padded  ", undefined, "\tx\n"] as const;
export const NAME_TEXTS = ["my session", "", "   ", "  padded name  ", "two\nlines\r\n", undefined] as const;

export const ENTRY_TYPES = [
	"message",
	"thinking_level_change",
	"model_change",
	"active_tools_change",
	"compaction",
	"branch_summary",
	"custom",
	"custom_message",
	"label",
	"session_info",
	"leaf",
] as const;

/** The type-specific fields of a random entry of `type` (no id, parentId or timestamp). */
export function entryBody(r: Rand, type: (typeof ENTRY_TYPES)[number], pick: Picker): Record<string, unknown> | undefined {
	switch (type) {
		case "message":
			return { message: message(r) };
		case "thinking_level_change":
			return { thinkingLevel: r.pick(["off", "low", "medium", "high"]) };
		case "model_change":
			return { provider: r.pick(["anthropic", "openai"]), modelId: r.pick(["claude-opus-4", "gpt-5-mini"]) };
		case "active_tools_change":
			return { activeToolNames: r.pick([[], ["read"], ["read", "bash", "edit"]]) };
		case "compaction": {
			const kept = r.bool(0.7) ? pick.entry() : undefined;
			const body: Record<string, unknown> = {
				summary: text(r, "summary"),
				tokensBefore: r.int(100_000),
			};
			if (kept !== undefined) body.firstKeptEntryId = ref(kept);
			if (r.bool(0.5)) body.retainedTail = [message(r, "user"), message(r, "assistant")].slice(0, 1 + r.int(2));
			if (r.bool(0.3)) body.details = { readFiles: ["a.txt"], modifiedFiles: [] };
			if (r.bool(0.3)) body.usage = usage(r);
			if (r.bool(0.2)) body.fromHook = r.bool();
			return body;
		}
		case "branch_summary": {
			const from = pick.entry();
			const body: Record<string, unknown> = {
				fromId: from === undefined || r.bool(0.2) ? "root" : ref(from),
				summary: r.bool(0.2) ? "" : text(r, "branch"),
			};
			if (r.bool(0.3)) body.usage = usage(r);
			if (r.bool(0.3)) body.details = { note: r.hex(4) };
			if (r.bool(0.2)) body.fromHook = true;
			return body;
		}
		case "custom": {
			const body: Record<string, unknown> = { customType: r.pick(["ext-a", "ext-b"]) };
			if (r.bool(0.8)) body.data = r.pick([{ n: r.int(10) }, [1, 2, 3], "text", null, 0.5]);
			return body;
		}
		case "custom_message": {
			const body: Record<string, unknown> = {
				customType: r.pick(["note", "reminder"]),
				content: r.bool() ? text(r, "custom") : [{ type: "text", text: text(r, "custom") }],
				display: r.bool(),
			};
			if (r.bool(0.3)) body.details = { k: r.hex(3) };
			return body;
		}
		case "label": {
			const target = r.bool(0.9) ? pick.entry() : pick.any();
			if (target === undefined) return undefined;
			const label = r.pick(LABEL_TEXTS);
			return label === undefined ? { targetId: ref(target) } : { targetId: ref(target), label };
		}
		case "session_info": {
			const name = r.pick(NAME_TEXTS);
			return name === undefined ? {} : { name };
		}
		case "leaf": {
			const target = r.bool(0.8) ? pick.entry() : undefined;
			return { targetId: target === undefined ? null : ref(target) };
		}
	}
}
