/**
 * The page's one way to the API: same-origin fetch with the user's key (when one was given) on
 * every call, errors kept exactly as the API gave them (status, type, code, param, message), and
 * POST /v1/responses streamed as its SSE events.
 */
import { readSse } from './sse.ts';
import { apiKey } from './key-store.ts';

/** An API error as the API gave it ({"error": {...}}), with its HTTP status when there was one. */
export interface ApiErrorInfo {
  status?: number;
  type?: string | null;
  code?: string | null;
  param?: string | null;
  message: string;
}

export class ApiError extends Error {
  constructor(readonly info: ApiErrorInfo) {
    super(info.message);
    this.name = 'ApiError';
  }
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  const key = apiKey();
  return key === undefined ? extra : { ...extra, Authorization: `Bearer ${key}` };
}

/** The error body of a non-2xx answer, or a description of what came back instead. */
async function errorOf(res: Response): Promise<ApiError> {
  const text = await res.text();
  try {
    const error = (JSON.parse(text) as { error?: ApiErrorInfo }).error;
    if (error && typeof error.message === 'string') return new ApiError({ ...error, status: res.status });
  } catch {
    // not JSON: reported below
  }
  return new ApiError({ status: res.status, message: text.trim() || res.statusText || `HTTP ${res.status}` });
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const res = await fetch(path, { headers: headers(), signal, cache: 'no-store' });
  if (!res.ok) throw await errorOf(res);
  return (await res.json()) as T;
}

export async function getText(path: string, signal?: AbortSignal): Promise<string> {
  const res = await fetch(path, { headers: headers(), signal, cache: 'no-store' });
  if (!res.ok) throw await errorOf(res);
  return res.text();
}

/** One Responses stream event (the fields the page reads). */
export interface StreamEvent {
  type: string;
  [field: string]: unknown;
}

/** POST /v1/responses with stream:true; yields its events until [DONE]. Throws ApiError on a non-2xx answer. */
export async function* streamResponse(body: object, signal: AbortSignal): AsyncGenerator<StreamEvent> {
  const res = await fetch('/v1/responses', {
    method: 'POST',
    headers: headers({ 'Content-Type': 'application/json', Accept: 'text/event-stream' }),
    body: JSON.stringify({ ...body, stream: true }),
    signal,
  });
  if (!res.ok) throw await errorOf(res);
  if (!res.body) throw new ApiError({ message: 'The server sent no stream.' });
  for await (const frame of readSse(res.body)) {
    if (frame.data === '[DONE]') return;
    yield JSON.parse(frame.data) as StreamEvent;
  }
}
