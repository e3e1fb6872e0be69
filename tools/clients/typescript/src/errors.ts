/**
 * The one error type of the client: a failed request, carrying the server's stable `code`.
 *
 * Codes and statuses are the server's (docs/api.md, "Errors"). Two codes are the client's own,
 * with status 0: `transport` (the connection failed or broke before a complete answer) and
 * `invalid_response` (the server answered something that is not the documented JSON).
 */
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
}

/** Whether `error` is a [`GroveError`] with the given code. */
export function isGroveError(error: unknown, code?: string): error is GroveError {
	return error instanceof GroveError && (code === undefined || error.code === code);
}
