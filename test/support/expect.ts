/** The error envelope (docs/api-guide.md#envelope-and-errors), with the request id of the response. */
export function expectError(
  res: { status: number; body: any; headers: Record<string, string> },
  status: number,
  code: string,
) {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  expect(res.body).toEqual({
    ok: false,
    requestId: res.headers['x-request-id'],
    error: expect.objectContaining({ code, message: expect.any(String) }),
  });
}

export const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
