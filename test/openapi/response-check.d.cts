// Types of response-check.cjs, for the TypeScript tests.
export interface Violation { operation: string, status: number, url: string, requestId: string, problems: string[] }
export function checkResponses (options: { report: (violation: Violation) => void }): void
export function describeViolation (violation: Violation): string
export const SERVICE_MARK: string
