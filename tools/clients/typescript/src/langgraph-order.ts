/**
 * `WriteOrder`: the order in which a `GroveSaver` writes each session.
 *
 * LangGraph does not wait for one checkpointer call before the next: with its default `async`
 * durability a superstep's `putWrites` run while the checkpoint they belong to is still being
 * put, and that `put` may even be called after them (it is chained behind the previous
 * checkpoint's). docs/langgraph.md reads writes as the children of their checkpoint, so writes
 * must not reach grove before it. What callers may rely on:
 * - `run` executes one session's work items one at a time, in the order of the calls, whatever
 *   becomes of the previous one; sessions do not wait for each other.
 * - `park` keeps writes whose checkpoint is not stored yet; `release` (the checkpoint's `put`,
 *   inside its own work item) appends them under it, in the order they were parked. Writes still
 *   parked when the session has had no work for one turn of the event loop (every call LangGraph
 *   chains on the saver's promises has then been made) are appended without a parent: their
 *   checkpoint is not coming.
 * - `settled` resolves once the work queued so far has finished (a read after a write sees it).
 */

/** Writes waiting for their checkpoint: `append(true)` under it, `append(false)` without a parent. */
type Append = (underCheckpoint: boolean) => Promise<void>;

interface Parked {
	append: Append;
	resolve: () => void;
	reject: (error: unknown) => void;
}

interface SessionQueue {
	tail: Promise<void>;
	/** Work items queued and not finished. */
	pending: number;
	/** Checkpoint id → writes waiting for it, in the order they came. */
	parked: Map<string, Parked[]>;
}

export class WriteOrder {
	private readonly sessions = new Map<string, SessionQueue>();

	/** Runs `work` after every item queued before it on the session. */
	run<T>(sid: string, work: () => Promise<T>): Promise<T> {
		let queue = this.sessions.get(sid);
		if (queue === undefined) {
			queue = { tail: Promise.resolve(), pending: 0, parked: new Map() };
			this.sessions.set(sid, queue);
		}
		const current = queue;
		current.pending += 1;
		const result = current.tail.then(work);
		current.tail = result.then(
			() => this.finished(sid, current),
			() => this.finished(sid, current),
		);
		return result;
	}

	/** Resolves once the work queued on the session so far has finished. */
	async settled(sid: string): Promise<void> {
		await this.sessions.get(sid)?.tail;
	}

	/**
	 * Keeps writes until their checkpoint is put (`release`), or until the session is idle; the
	 * promise settles when they are appended.
	 */
	park(sid: string, checkpointId: string, append: Append): Promise<void> {
		const queue = this.sessions.get(sid);
		if (queue === undefined) throw new Error(`park outside a work item of session ${sid}`);
		return new Promise<void>((resolve, reject) => {
			const waiting = queue.parked.get(checkpointId) ?? [];
			waiting.push({ append, resolve, reject });
			queue.parked.set(checkpointId, waiting);
		});
	}

	/** Appends the writes parked for a checkpoint just stored, under it; call from a work item. */
	async release(sid: string, checkpointId: string): Promise<void> {
		const queue = this.sessions.get(sid);
		const waiting = queue?.parked.get(checkpointId);
		if (queue === undefined || waiting === undefined) return;
		queue.parked.delete(checkpointId);
		for (const parked of waiting) await settle(parked, true);
	}

	private finished(sid: string, queue: SessionQueue): void {
		queue.pending -= 1;
		if (queue.pending > 0) return;
		if (queue.parked.size === 0) {
			if (this.sessions.get(sid) === queue) this.sessions.delete(sid);
			return;
		}
		setImmediate(() => {
			if (queue.pending > 0 || queue.parked.size === 0) return;
			const orphans = [...queue.parked.values()].flat();
			queue.parked.clear();
			for (const parked of orphans) void this.run(sid, () => settle(parked, false));
		});
	}
}

async function settle(parked: Parked, underCheckpoint: boolean): Promise<void> {
	try {
		await parked.append(underCheckpoint);
		parked.resolve();
	} catch (error) {
		parked.reject(error);
	}
}
