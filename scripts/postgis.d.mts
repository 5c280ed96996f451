export function startPostgis (opts?: { log?: (msg: string) => void }): Promise<{ url: string, port: number, stop: () => void }>
export function startReplica (primary: { port: number }, opts?: { log?: (msg: string) => void }): Promise<{ url: string, port: number, start: () => void, stopServer: () => void, stop: () => void }>
export function binDir (): string
export function freePort (): Promise<number>
export function uidGid (user: string): [number, number]
