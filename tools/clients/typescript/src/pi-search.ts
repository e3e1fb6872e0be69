/**
 * What grove's searches for pi 0.84's `SessionSearch` share (`GroveSessionSearch` in ./pi.js,
 * `GroveLaneSessionSearch` in ./pi-lanes.js): pi's options and hit, its abort and its rules for a
 * search that asks for nothing. Imports nothing of pi (pi 0.83 has no search; the lanes' module
 * imports no pi at all).
 */

/** pi 0.84's `SessionSearchOptions` (pi-agent-core 0.84 `search/index.d.ts`; pi 0.83 has no search). */
export interface PiSearchOptions {
	/** Only entries of these types; none at all finds nothing. */
	readonly entryTypes?: readonly string[];
	/** At most this many hits. */
	readonly limit?: number;
	/** Aborting ends the search with the signal's reason (an `AbortError` when it is no `Error`). */
	readonly signal?: AbortSignal;
}

/** pi 0.84's `SessionSearchHit`, with what grove's index says of the match. */
export interface GroveSearchHit {
	readonly sessionId: string;
	readonly entryId: string;
	/** Up to 160 characters of the entry's text around the best match. */
	readonly snippet: string;
	/** BM25: higher is better. */
	readonly score: number;
}

/** The most hits one search asks the server for (`GET /v1/search`'s `limit`). */
export const SEARCH_MAX_HITS = 1000;

/** Throws as pi's scanning search does when `signal` was aborted: its reason, or an `AbortError`. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
	if (!signal?.aborted) return;
	if (signal.reason instanceof Error) throw signal.reason;
	const error = new Error("The operation was aborted");
	error.name = "AbortError";
	throw error;
}

/** Whether a pi search asks for nothing: blank text, a limit of 0 or no entry type at all (pi's scanning search's rules). */
export function searchesNothing(text: string, options: PiSearchOptions): boolean {
	return text.trim() === "" || (options.limit !== undefined && options.limit <= 0) || options.entryTypes?.length === 0;
}
