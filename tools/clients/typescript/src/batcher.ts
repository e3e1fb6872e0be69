/**
 * `AppendBatcher`: gathers the appends a process makes at the same time — to many sessions, as
 * a benchmark harness or a platform running many agents does — into `POST /v1/appends`
 * requests, so that they cost one round trip and one flush on the server per request rather
 * than per append. It calls `GroveClient.appendBatch` and nothing else.
 *
 * Appends made while no request is in flight go out together on the next turn of the event
 * loop; appends made while one is in flight wait for it and go out together right after (as
 * a group commit gathers writers). Each `append` resolves with its own entry's id or rejects
 * with its own `GroveError`, exactly as `GroveClient.append` would; a request that fails as a
 * whole rejects every append it carried. Appends to one session are applied in the order of
 * the calls: one request is in flight at a time, and a request's items are applied in order.
 */
import type { GroveClient } from "./client.js";
import { GroveError } from "./errors.js";
import type { AppendOptions, BatchAppend, NewEntry } from "./types.js";

export interface AppendBatcherOptions {
	/** The most appends in one request (default 1,000; the server takes at most 10,000). */
	maxItems?: number;
}

interface Waiting {
	item: BatchAppend;
	resolve(id: string): void;
	reject(error: unknown): void;
}

export class AppendBatcher {
	private readonly client: GroveClient;
	private readonly maxItems: number;
	private queue: Waiting[] = [];
	private sending = 0;
	private inFlight: Promise<void> | undefined;
	private scheduled = false;

	constructor(client: GroveClient, options: AppendBatcherOptions = {}) {
		const maxItems = options.maxItems ?? 1000;
		if (!Number.isInteger(maxItems) || maxItems < 1 || maxItems > 10_000) {
			throw new RangeError(`maxItems must be an integer from 1 to 10000, not ${maxItems}`);
		}
		this.client = client;
		this.maxItems = maxItems;
	}

	/** Appends `entry` to session `sid` as `GroveClient.append` does, in the next request. */
	append(sid: string, entry: NewEntry, options: AppendOptions = {}): Promise<string> {
		return new Promise<string>((resolve, reject) => {
			this.queue.push({ item: { session: sid, entry, ...options }, resolve, reject });
			this.schedule();
		});
	}

	/** Appends not yet answered (queued or in flight). */
	get pending(): number {
		return this.queue.length + this.sending;
	}

	/** Resolves once every append made before the call has been answered. */
	async flush(): Promise<void> {
		while (this.inFlight || this.queue.length > 0 || this.scheduled) {
			if (this.inFlight) await this.inFlight;
			else await new Promise<void>((done) => setImmediate(done));
		}
	}

	private schedule(): void {
		if (this.scheduled || this.inFlight) return;
		this.scheduled = true;
		// The appends made in this turn of the event loop go out together.
		setImmediate(() => {
			this.scheduled = false;
			this.send();
		});
	}

	private send(): void {
		if (this.inFlight || this.queue.length === 0) return;
		const batch = this.queue.splice(0, this.maxItems);
		this.sending = batch.length;
		this.inFlight = this.deliver(batch).finally(() => {
			this.inFlight = undefined;
			this.sending = 0;
			// Appends made meanwhile go out now, together.
			this.send();
		});
	}

	private async deliver(batch: Waiting[]): Promise<void> {
		let results;
		try {
			results = await this.client.appendBatch(batch.map((w) => w.item));
		} catch (error) {
			for (const waiting of batch) waiting.reject(error);
			return;
		}
		batch.forEach((waiting, i) => {
			const result = results[i];
			if (result && "id" in result) waiting.resolve(result.id);
			else if (result) waiting.reject(new GroveError(result.code, result.status, result.message));
		});
	}
}
