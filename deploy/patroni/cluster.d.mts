export interface HaNode { name: string, pgPort: number, apiPort: number, pid?: number }
export interface HaCluster {
  dir: string
  /** The multi-host DATABASE_URL (target_session_attrs=read-write). */
  url: string
  hostUrl: (name: string) => string
  nodes: HaNode[]
  view: () => Promise<{ members: Array<{ name: string, role: string, state: string, lag?: number }> } | undefined>
  leader: (timeoutMs?: number) => Promise<string>
  waitReady: (standbys?: number, timeoutMs?: number) => Promise<string>
  kill: (name: string) => void
  startNode: (name: string) => void
  pause: (name: string, on: boolean) => void
  stop: () => void
}
export function haToolsInstalled (): boolean
export function startHaCluster (opts?: { nodes?: number, synchronous?: boolean, dir?: string, archiveCommand?: string, log?: (msg: string) => void, stopOnExit?: boolean }): Promise<HaCluster>
