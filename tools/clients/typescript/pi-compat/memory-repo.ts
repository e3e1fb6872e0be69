/**
 * A drop-in for pi v0.83.0's `InMemorySessionRepo` (packages/agent/src/harness/session/
 * memory-repo.ts) backed by the grove server that `GROVE_URL` names. As pi's, the repo knows the
 * sessions it made (`open` returns the same `Session` object) and `delete` forgets one; each
 * session is a grove session of its own, and `fork` is grove's `path` fork of it.
 */
import { Session, SessionError, type SessionMetadata, type SessionRepo } from "@earendil-works/pi-agent-core";
import { uuidv7 } from "../src/ids.js";
import { forkSession, GroveSessionStorage } from "../src/pi.js";
import { groveClient } from "./client.js";
import { InMemorySessionStorage } from "./memory-storage.js";

export class InMemorySessionRepo implements SessionRepo<SessionMetadata, { id?: string }, void> {
	private sessions = new Map<string, Session<SessionMetadata>>();

	async create(options: { id?: string } = {}): Promise<Session<SessionMetadata>> {
		const metadata: SessionMetadata = { id: options.id ?? uuidv7(), createdAt: new Date().toISOString() };
		const session = new Session(new InMemorySessionStorage({ metadata }));
		this.sessions.set(metadata.id, session);
		return session;
	}

	async open(metadata: SessionMetadata): Promise<Session<SessionMetadata>> {
		const session = this.sessions.get(metadata.id);
		if (!session) {
			throw new SessionError("not_found", `Session not found: ${metadata.id}`);
		}
		return session;
	}

	async list(): Promise<SessionMetadata[]> {
		return Promise.all([...this.sessions.values()].map((session) => session.getMetadata()));
	}

	async delete(metadata: SessionMetadata): Promise<void> {
		this.sessions.delete(metadata.id);
	}

	async fork(
		sourceMetadata: SessionMetadata,
		options: { entryId?: string; position?: "before" | "at"; id?: string },
	): Promise<Session<SessionMetadata>> {
		const source = await this.open(sourceMetadata);
		const sourceStorage = source.getStorage();
		if (!(sourceStorage instanceof InMemorySessionStorage)) {
			throw new SessionError("storage", `Session ${sourceMetadata.id} is not stored on grove`);
		}
		const grove = await sourceStorage.groveStorage();
		const metadata: SessionMetadata = { id: options.id ?? uuidv7(), createdAt: new Date().toISOString() };
		const groveId = uuidv7();
		await forkSession(groveClient(), grove.sessionId, groveId, metadata, options, undefined, sourceMetadata.id);
		const storage = InMemorySessionStorage.attach(
			new GroveSessionStorage(groveClient(), groveId, metadata),
			metadata,
		);
		const session = new Session(storage);
		this.sessions.set(metadata.id, session);
		return session;
	}
}
