/**
 * The one error type of the client: a failed request, carrying the server's stable `code`.
 *
 * Codes and statuses are the server's (docs/api.md, "Errors"). Two codes are the client's own,
 * with status 0: `transport` (the connection failed or broke before a complete answer) and
 * `invalid_response` (the server answered something that is not the documented JSON).
 */
/**
 * The codes of failures that may go away when the request is sent again: `unavailable` (503, the
 * server's database could not be reached), `busy` (409, another client holds the session's turn,
 * or grove gave up a commit that other writers kept overtaking) and `transport`.
 */
const RETRYABLE: ReadonlySet<string> = new Set(["unavailable", "busy", "transport"]);

export class GroveError extends Error {
	/** The stable error code, e.g. `not_found`, `invalid_entry`, `busy`. */
	readonly code: string;
	/** The HTTP status, or 0 when no complete answer was received. */
	readonly status: number;

	constructor(code: string, status: number, message: string, options?: { cause?: unknown }) {
		super(message, options);
		this.name = "GroveError";
		this.code = code;
		this.status = status;
	}

	/**
	 * Whether the same request may succeed if sent again (see `RETRYABLE`). A write that failed
	 * with `unavailable` or `transport` may still have been applied (the answer, not the commit,
	 * was lost): give appends their own entry `id` and send the same append again; the server
	 * answers a retry of an applied append as the first time, without storing it twice.
	 */
	get retryable(): boolean {
		return RETRYABLE.has(this.code);
	}
}

/** Whether `error` is a [`GroveError`] with the given code. */
export function isGroveError(error: unknown, code?: string): error is GroveError {
	return error instanceof GroveError && (code === undefined || error.code === code);
}
