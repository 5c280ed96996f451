export function pgbouncerBinary (): string | undefined
export function startPgBouncer (upstream: string, opts?: { poolSize?: number }): Promise<{ port: number, pooled: (url: string) => string, stop: () => void }>
