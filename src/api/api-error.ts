// An HTTP error the API answers with its own status, `{"detail": "<message>"}` body and headers
// (401, 429, 503 while draining). Validation failures are InvalidRequestError (src/protocol/errors.ts).

export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
    /** The stable name logged with the request; by default the one its status has in the error table. */
    readonly code?: string,
  ) {
    super(detail);
    this.name = 'ApiError';
  }
}
