// The map page of Source Registry: sign in (POST /token, the token kept in sessionStorage only),
// the organisation's sources on a Leaflet map as vector tiles at every zoom (OGC API – Tiles,
// drawn on canvas by Leaflet.VectorGrid, the token sent with each tile request), details of a
// clicked source (GET /sources/?id=) with Delete for editors, a period filter (the tiles' datetime),
// GeoJSON upload (POST /sources), and the signed-in user's API keys (create, shown once; list;
// revoke). Every URL is relative to the page, so the page works behind
// a path prefix; nothing from a source is ever inserted as HTML (textContent only).
'use strict'

;(function () {
  const TOKEN_KEY = 'source-registry-token'
  const TILES = 'collections/sources/tiles/WebMercatorQuad/{z}/{y}/{x}'
  const CONFLICT_TILES = 'collections/conflicts/tiles/WebMercatorQuad/{z}/{y}/{x}'
  // A conflict's overlap in the colour of its state (the legend's).
  const STATE_COLOUR = { open: '#d62828', in_review: '#f77f00', disputed: '#7b2cbf', accepted: '#2a9d8f' }
  const STATE_TEXT = { open: 'Conflict: open', in_review: 'Conflict: in review', disputed: 'Conflict: disputed', accepted: 'Conflict: accepted' }
  // The stances a party may move to (the service's conflict_stance_transitions; it refuses others with 409).
  const NEXT_STANCES = { open: ['acknowledged'], acknowledged: ['disputed', 'accepted'], disputed: ['acknowledged', 'accepted'], accepted: ['acknowledged', 'disputed'] }
  const STYLE = {
    registered: { fill: true, color: '#1d3557', weight: 2, fillColor: '#457b9d', fillOpacity: 0.3 },
    conflict: { fill: true, color: '#b3261e', weight: 2, fillColor: '#b3261e', fillOpacity: 0.35 },
    // A 2-pixel mark for sources too small to draw (tiles.repository.ts): filled, no outline.
    mark: { fill: true, stroke: false, fillColor: '#1d3557', fillOpacity: 0.8 },
    markConflict: { fill: true, stroke: false, fillColor: '#b3261e', fillOpacity: 0.8 },
    selected: { weight: 4 },
    rejected: { color: '#e76f51', weight: 3, dashArray: '6 4', fillColor: '#f4a261', fillOpacity: 0.3 }
  }
  const $ = (id) => document.getElementById(id)

  // Leaflet.VectorGrid 1.3's canvas tiles call L.DomEvent.fakeStop on a click, which Leaflet 1.8
  // removed (Leaflet.VectorGrid#274): their click handler as Leaflet 1.9's own canvas has it.
  L.Canvas.Tile.include({
    _onClick: function (e) {
      const point = this._map.mouseEventToLayerPoint(e).subtract(this.getOffset())
      let clicked
      for (const id in this._layers) {
        const layer = this._layers[id]
        if (layer.options.interactive && layer._containsPoint(point) && !this._map._draggableMoved(layer)) clicked = layer
      }
      this._fireEvent(clicked ? [clicked] : false, e)
    }
  })
  // A tile that cannot be fetched is drawn empty, so the layer still says when it has loaded.
  const SourceTiles = L.VectorGrid.Protobuf.extend({
    _getVectorTilePromise: function (coords) {
      return L.VectorGrid.Protobuf.prototype._getVectorTilePromise.call(this, coords).catch(() => ({ layers: {} }))
    }
  })

  // --- session: the token lives in sessionStorage only (never a URL, cookie or localStorage) ---
  let session = null
  let expiryTimer
  function claims (token) {
    try {
      const payload = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')
      return JSON.parse(atob(payload))
    } catch { return {} }
  }
  function loadSession () {
    try {
      const s = JSON.parse(sessionStorage.getItem(TOKEN_KEY) || 'null')
      if (s && s.expiresAt > Date.now()) return s
    } catch {}
    sessionStorage.removeItem(TOKEN_KEY)
    return null
  }
  function startSession (token, expiresIn) {
    const c = claims(token)
    session = { token, expiresAt: Date.now() + expiresIn * 1000, role: c.role, org: c.org, sub: c.sub }
    sessionStorage.setItem(TOKEN_KEY, JSON.stringify(session))
    armExpiry()
  }
  function armExpiry () {
    clearTimeout(expiryTimer)
    expiryTimer = setTimeout(() => signOut('Your session has expired: sign in again.'), Math.max(0, session.expiresAt - Date.now()))
  }
  function signOut (why) {
    session = null
    closeKeys()
    closePanel()
    if (sourcesLayer) sourcesLayer.remove()
    clearTimeout(expiryTimer)
    sessionStorage.removeItem(TOKEN_KEY)
    showSignIn()
    if (why) say(why, { error: true })
  }

  // --- talking to the service ---
  class ServiceError extends Error {
    constructor (status, body) {
      super(body && body.message ? body.message : `The service answered ${status}.`)
      this.status = status
      this.body = body || {}
    }
  }
  async function api (path, options = {}) {
    // X-Requested-With: a 401 then offers no Basic challenge, which would open the browser's
    // own password dialog over the page.
    const headers = Object.assign({ 'x-requested-with': 'XMLHttpRequest' }, options.headers)
    if (session) headers.authorization = `Bearer ${session.token}`
    const res = await fetch(path, Object.assign({}, options, { headers }))
    let body = null
    try { body = await res.json() } catch {}
    if (res.status === 401 && session) {
      signOut(`Signed out: ${body && body.message ? body.message : 'the service no longer accepts your token'} (401). Sign in again.`)
    }
    if (!res.ok) throw new ServiceError(res.status, body)
    return body
  }

  // --- messages: always textContent ---
  function say (text, { error = false, details = [] } = {}) {
    $('message-text').textContent = text
    const list = $('message-details')
    list.replaceChildren(...details.map((d) => {
      const li = document.createElement('li')
      li.textContent = d
      return li
    }))
    $('message').classList.toggle('error', error)
    $('message').hidden = false
  }
  $('message-close').addEventListener('click', () => { $('message').hidden = true })

  // --- sign in ---
  function showSignIn () {
    $('sign-in').hidden = false
    $('workspace').hidden = true
    $('sign-out').hidden = true
    $('keys-open').hidden = true
    $('who').textContent = ''
    $('email').focus()
  }
  $('sign-in-form').addEventListener('submit', async (event) => {
    event.preventDefault()
    try {
      const body = await api('token', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: $('email').value, password: $('password').value })
      })
      $('password').value = ''
      $('message').hidden = true
      startSession(body.token, body.expires_in)
      await showWorkspace()
    } catch (err) {
      say(`Sign-in failed: ${err.message}${err.status ? ` (${err.status})` : ''}`, { error: true })
    }
  })
  $('sign-out').addEventListener('click', () => signOut('Signed out.'))

  // --- the map ---
  let map
  let sourcesLayer
  let highlightLayer
  let selected = null
  let conflictsLayer
  /** The conflict in its panel: its Feature and the caller's party in it. */
  let shown = null
  let fittedOnce = false
  let revalidate = false

  function graticule () {
    const lines = (step) => {
      const out = []
      for (let lon = -180; lon <= 180; lon += step) out.push([[-85, lon], [85, lon]])
      for (let lat = -80; lat <= 80; lat += step) out.push([[lat, -180], [lat, 180]])
      return out
    }
    const coarse = L.polyline(lines(10), { color: '#9aa8b5', weight: 1, interactive: false })
    const fine = L.polyline(lines(1), { color: '#c3ccd5', weight: 0.5, interactive: false })
    coarse.addTo(map)
    const update = () => { if (map.getZoom() >= 5) fine.addTo(map); else fine.remove() }
    map.on('zoomend', update)
    update()
  }

  function legend () {
    const control = L.control({ position: 'bottomright' })
    control.onAdd = () => {
      const div = L.DomUtil.create('div', 'legend')
      const states = Object.keys(STATE_TEXT).map((s) => [`state ${s}`, STATE_TEXT[s]])
      for (const [cls, text] of [['registered', 'Registered'], ['conflict', 'In conflict'], ...states, ['mark', 'Small sources (zoom in)'], ['rejected', 'Rejected upload']]) {
        const row = document.createElement('div')
        const swatch = document.createElement('span')
        swatch.className = `swatch ${cls}`
        row.append(swatch, document.createTextNode(text))
        div.append(row)
      }
      return div
    }
    control.addTo(map)
  }

  /** The service's own property names (map/config.json): the others are the source's attributes. */
  let serviceProperties = new Set()

  async function createMap () {
    if (map) return
    const config = await (await fetch('map/config.json')).json()
    serviceProperties = new Set(config.serviceProperties || [])
    // The view is set when the map is made: layers added to a map without one fail in Leaflet.
    const view = readHash()
    fittedOnce = view.center !== undefined
    map = L.map('map', { worldCopyJump: true, minZoom: 1, center: view.center || [20, 0], zoom: view.center ? view.zoom : 2 })
    if (config.tileUrl && config.tileUrl !== 'none') {
      L.tileLayer(config.tileUrl, { maxZoom: 19, attribution: config.attribution }).addTo(map)
    } else {
      graticule()
    }
    // Its own pane, above the overlays (graticule, a rejected upload's outline): their SVG
    // covers the map and would take the clicks meant for the tiles' canvases.
    map.createPane('sources').style.zIndex = 450
    sourcesLayer = new SourceTiles(tileUrl(), {
      pane: 'sources',
      rendererFactory: L.canvas.tile,
      interactive: true,
      maxZoom: 22,
      getFeatureId: (f) => f.properties.id,
      vectorTileLayerStyles: { sources: styleOf }
    })
    // The overlaps above the sources, not interactive (their canvases would take the sources'
    // clicks): a click on a source opens the conflict whose overlap holds the point, if any (an
    // overlap lies inside the caller's own source).
    map.createPane('conflicts').style.zIndex = 460
    conflictsLayer = new SourceTiles(CONFLICT_TILES, {
      pane: 'conflicts',
      rendererFactory: L.canvas.tile,
      interactive: false,
      maxZoom: 22,
      getFeatureId: (f) => f.properties.id,
      vectorTileLayerStyles: { conflicts: (p) => ({ fill: true, color: STATE_COLOUR[p.state] || '#d62828', weight: 2, fillColor: STATE_COLOUR[p.state] || '#d62828', fillOpacity: 0.45 }) }
    })
    sourcesLayer.on('click', (e) => {
      const conflict = conflictAt(e.latlng)
      if (conflict) openConflict(conflict.id)
      else openSource(e.layer.properties || {}, e.latlng)
    })
    sourcesLayer.on('loading', loadingState)
    sourcesLayer.on('load', () => {
      revalidate = false
      sourcesLayer.options.fetchOptions.cache = 'default'
      loadingState()
    })
    legend()
    map.on('moveend', writeHash)
  }

  // --- the URL hash keeps view and filter (never the token) ---
  function readHash () {
    const p = new URLSearchParams(location.hash.slice(1))
    const out = {}
    const m = /^(\d+)\/(-?[\d.]+)\/(-?[\d.]+)$/.exec(p.get('map') || '')
    if (m) { out.zoom = Number(m[1]); out.center = [Number(m[2]), Number(m[3])] }
    return out
  }
  function writeHash () {
    if (!map) return
    const c = map.getCenter()
    const p = new URLSearchParams()
    p.set('map', `${map.getZoom()}/${c.lat.toFixed(5)}/${c.lng.toFixed(5)}`)
    if ($('from').value) p.set('from', $('from').value)
    if ($('to').value) p.set('to', $('to').value)
    history.replaceState(null, '', `#${p.toString()}`)
  }
  function filterFromUrl () {
    const hash = new URLSearchParams(location.hash.slice(1))
    const query = new URLSearchParams(location.search) // a link to map?datetime=…
    $('from').value = hash.get('from') || ''
    $('to').value = hash.get('to') || ''
    const dt = query.get('datetime')
    if (!hash.has('from') && !hash.has('to') && dt) {
      const [a, b] = dt.includes('/') ? dt.split('/') : [dt, dt]
      if (a && a !== '..') $('from').value = a.slice(0, 10)
      if (b && b !== '..') $('to').value = b.slice(0, 10)
    }
  }
  function datetime () {
    const from = $('from').value
    const to = $('to').value
    if (!from && !to) return null
    return `${from ? `${from}T00:00:00Z` : '..'}/${to ? `${to}T00:00:00Z` : '..'}`
  }

  // --- the sources as vector tiles ---
  // A feature no larger than the tiles' 2-pixel mark cell at this zoom is a mark (for one source
  // or several: tiles.repository.ts), drawn without an outline, which would hide its size.
  const EQUATOR_M = 40075016.686
  function styleOf (p, zoom) {
    const cell = EQUATOR_M / 2 ** zoom / 128
    if (p.count > 1 || !p.id || p.area_m2 <= cell * cell) return p.conflict ? STYLE.markConflict : STYLE.mark
    return p.conflict ? STYLE.conflict : STYLE.registered
  }
  function tileUrl () {
    const dt = datetime()
    return dt ? `${TILES}?datetime=${encodeURIComponent(dt)}` : TILES
  }
  // #map carries data-loading while tiles in view are due (tests wait for it to go).
  function loadingState () {
    if (sourcesLayer && sourcesLayer._map && sourcesLayer.isLoading()) $('map').setAttribute('data-loading', 'true')
    else $('map').removeAttribute('data-loading')
  }
  // Draws the tiles again: for another user, filter, or after a write. After a write each tile
  // is revalidated (If-None-Match; 304 where nothing changed) rather than taken from the
  // browser's cache for its max-age.
  function drawSources ({ afterWrite = false } = {}) {
    if (!session || !map) return
    revalidate = revalidate || afterWrite
    sourcesLayer.options.fetchOptions = {
      headers: { authorization: `Bearer ${session.token}`, 'x-requested-with': 'XMLHttpRequest' },
      cache: revalidate ? 'no-cache' : 'default'
    }
    if (map.hasLayer(sourcesLayer)) sourcesLayer.setUrl(tileUrl())
    else sourcesLayer.setUrl(tileUrl(), true).addTo(map)
    drawConflicts()
    loadingState()
  }
  // The conflicts' tiles are revalidated at every request (no-cache): a stance shows at once.
  function drawConflicts () {
    if (!session || !map) return
    conflictsLayer.options.fetchOptions = { headers: { authorization: `Bearer ${session.token}`, 'x-requested-with': 'XMLHttpRequest' }, cache: 'no-cache' }
    if (map.hasLayer(conflictsLayer)) conflictsLayer.redraw()
    else conflictsLayer.addTo(map)
  }
  /** The properties of the conflict drawn at this point, or null. */
  function conflictAt (latlng) {
    if (!conflictsLayer || !map.hasLayer(conflictsLayer)) return null
    const at = map.latLngToLayerPoint(latlng)
    const zoom = map.getZoom()
    for (const key in conflictsLayer._vectorTiles) {
      const tile = conflictsLayer._vectorTiles[key]
      if (!tile._map || tile.getCoord().z !== zoom) continue
      const point = at.subtract(tile.getOffset())
      for (const id in tile._layers) {
        const layer = tile._layers[id]
        if (!layer.properties) continue
        // Not interactive: its pixel bounds, which the hit test needs, are made here.
        if (!layer._pxBounds) layer.makeInteractive()
        if (layer._containsPoint(point)) return layer.properties
      }
    }
    return null
  }

  // The collection: its extent is the first view. Read at every sign-in, also when the view is
  // known, so that a token the service no longer takes signs out here: Leaflet.VectorGrid draws
  // a tile answered 401 as empty and tells no one.
  async function readCollection (fit) {
    try {
      const collection = await api('collections/sources')
      const bbox = collection.extent && collection.extent.spatial && collection.extent.spatial.bbox[0]
      if (fit && bbox && bbox.length === 4) map.fitBounds([[bbox[1], bbox[0]], [bbox[3], bbox[2]]], { padding: [20, 20], maxZoom: 14 })
    } catch (err) {
      if (err.status !== 401) say(`Could not read the collection: ${err.message}`, { error: true })
    }
  }

  // --- details panel ---
  function row (dl, term, value) {
    const dt = document.createElement('dt')
    dt.textContent = term
    const dd = document.createElement('dd')
    dd.textContent = value
    dl.append(dt, dd)
  }
  // A click on the map: a source's details from GET /sources/?id=; a mark for several sources
  // (no id) zooms in on them.
  async function openSource (p, latlng) {
    if (!p.id) {
      map.setView(latlng, Math.min(map.getZoom() + 3, 22))
      return
    }
    try {
      select(await api(`sources/?id=${encodeURIComponent(p.id)}`))
    } catch (err) {
      if (err.status !== 401) say(`Could not read ${p.id}: ${err.message} (${err.status || 'no answer'})`, { error: true })
    }
  }
  function select (feature) {
    if (selected) sourcesLayer.resetFeatureStyle(selected.id)
    selected = { id: feature.id }
    sourcesLayer.setFeatureStyle(feature.id, (p, zoom) => Object.assign({}, styleOf(p, zoom), STYLE.selected, { stroke: true }))
    const p = feature.properties || {}
    const dl = $('details')
    dl.replaceChildren()
    row(dl, 'Id', feature.id)
    row(dl, 'Feature id', p.feature_id)
    row(dl, 'Period', `${p.start_at} – ${p.end_at}`)
    row(dl, 'Area', `${(p.area_m2 / 10000).toLocaleString('en', { maximumFractionDigits: 2 })} ha`)
    row(dl, 'Created', p.created_at)
    if (session.role === 'admin') row(dl, 'Organisation', p.organisation)
    // The attributes: every other member, as the client sent it.
    for (const [name, value] of Object.entries(p)) {
      if (!serviceProperties.has(name)) row(dl, name, typeof value === 'string' ? value : JSON.stringify(value))
    }
    const conflicts = Array.isArray(p.conflicts) ? p.conflicts : []
    $('conflicts').replaceChildren(...(conflicts.length === 0
      ? [Object.assign(document.createElement('li'), { textContent: p.conflict === undefined ? 'Not checked by this service.' : 'None.' })]
      : [...conflicts.map((c) => Object.assign(document.createElement('li'), {
          textContent: `${c.id}: ${(c.overlap_m2 / 10000).toLocaleString('en', { maximumFractionDigits: 2 })} ha (${Math.round(c.overlap_ratio * 100)} %), ${c.overlap_start} – ${c.overlap_end}`
        })), ...(p.conflicts_total > conflicts.length
          ? [Object.assign(document.createElement('li'), { textContent: `and ${p.conflicts_total - conflicts.length} more` })]
          : [])]))
    $('delete').hidden = !(session.role === 'editor' || session.role === 'admin')
    $('panel').hidden = false
    $('panel-close').focus()
  }
  function closePanel () {
    if (selected) sourcesLayer.resetFeatureStyle(selected.id)
    selected = null
    $('panel').hidden = true
  }
  $('panel-close').addEventListener('click', closePanel)
  $('delete').addEventListener('click', async () => {
    if (!selected) return
    const id = selected.id
    if (!confirm(`Delete source ${id}? This cannot be undone.`)) return
    try {
      await api(`sources/?id=${encodeURIComponent(id)}`, { method: 'DELETE' })
      closePanel()
      say(`Deleted ${id}.`)
      drawSources({ afterWrite: true })
    } catch (err) {
      if (err.status !== 401) say(`Could not delete ${id}: ${err.message} (${err.status})`, { error: true })
    }
  })

  // --- a conflict's panel: the parties' stances, the actions (If-Match), the notes ---
  const canAct = () => session && (session.role === 'editor' || session.role === 'admin')
  function problem (err) {
    const b = err.body || {}
    const allowed = Array.isArray(b.allowed) ? ` Allowed: ${b.allowed.join(', ') || 'none'}.` : ''
    return `${b.message || err.message} (${err.status || 'no answer'})${allowed}`
  }
  async function openConflict (id) {
    try {
      const conflict = await api(`conflicts/${encodeURIComponent(id)}`)
      const notes = await api(`conflicts/${encodeURIComponent(id)}/notes`)
      showConflict(conflict, notes.notes)
    } catch (err) {
      if (err.status !== 401) say(`Could not read conflict ${id}: ${problem(err)}`, { error: true })
    }
  }
  function showConflict (conflict, notes) {
    const p = conflict.properties
    const own = p.parties.filter((x) => x.own)
    shown = { id: conflict.id, version: p.version, party: own.length === 1 ? own[0] : null }
    $('panel').hidden = true
    const dl = $('conflict-details')
    dl.replaceChildren()
    row(dl, 'Id', conflict.id)
    row(dl, 'State', p.state)
    row(dl, 'Overlap', `${(p.overlap_m2 / 10000).toLocaleString('en', { maximumFractionDigits: 2 })} ha`)
    row(dl, 'Period', `${p.overlap_start} – ${p.overlap_end}`)
    row(dl, 'Since', p.started_at)
    $('conflict-parties').replaceChildren(...p.parties.map((x) => Object.assign(document.createElement('li'), {
      textContent: `${x.own ? 'Yours' : 'Other party'}: ${x.source_id} — ${x.stance}${x.reason ? ` (“${x.reason}”)` : ''}`
    })))
    const party = shown.party
    const acting = canAct() && party !== null && p.state !== 'resolved'
    $('conflict-actions').hidden = !acting
    if (acting) {
      const next = NEXT_STANCES[party.stance] || []
      for (const stance of ['acknowledged', 'accepted', 'disputed']) $(`stance-${stance}`).disabled = !next.includes(stance)
      $('dispute-reason').disabled = !next.includes('disputed')
    }
    $('carve-summary').hidden = true
    $('carve-confirm').hidden = true
    $('conflict-notes').replaceChildren(...(notes.length === 0
      ? [Object.assign(document.createElement('li'), { textContent: 'No notes yet.' })]
      : notes.map((n) => {
          const li = document.createElement('li')
          const meta = Object.assign(document.createElement('span'), { className: 'meta', textContent: `${n.own ? (n.author || 'your organisation') : 'the other party'} · ${n.created_at}` })
          li.append(meta, document.createTextNode(n.body))
          return li
        })))
    $('note-form').hidden = !canAct()
    $('conflict-panel').hidden = false
  }
  function closeConflict () {
    shown = null
    $('conflict-panel').hidden = true
  }
  $('conflict-close').addEventListener('click', closeConflict)
  for (const stance of ['acknowledged', 'accepted', 'disputed']) {
    $(`stance-${stance}`).addEventListener('click', async () => {
      if (!shown) return
      const body = { stance }
      if (stance === 'disputed') {
        body.reason = $('dispute-reason').value.trim()
        if (!body.reason) { say('A dispute needs a reason.', { error: true }); $('dispute-reason').focus(); return }
      }
      const id = shown.id
      try {
        await api(`conflicts/${encodeURIComponent(id)}/stance`, { method: 'POST', headers: { 'content-type': 'application/json', 'if-match': `W/"${shown.version}"` }, body: JSON.stringify(body) })
        $('dispute-reason').value = ''
        say(`Your stance on ${id}: ${stance}.`)
        drawConflicts()
      } catch (err) {
        if (err.status !== 401) say(`Could not set the stance: ${problem(err)}`, { error: true })
      }
      await openConflict(id)
    })
  }
  $('note-form').addEventListener('submit', async (event) => {
    event.preventDefault()
    if (!shown) return
    const id = shown.id
    try {
      await api(`conflicts/${encodeURIComponent(id)}/notes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ body: $('note-body').value }) })
      $('note-body').value = ''
    } catch (err) {
      if (err.status !== 401) say(`Could not add the note: ${problem(err)}`, { error: true })
    }
    await openConflict(id)
  })
  // Carve-out: a dry run first (the area given up), then the carve with the source's version.
  let carving = null
  $('carve-preview').addEventListener('click', async () => {
    if (!shown || !shown.party) return
    const source = shown.party.source_id
    try {
      const dry = await api(`sources/carve?id=${encodeURIComponent(source)}&dry_run=true`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ conflicts: [shown.id] }) })
      const current = await api(`sources/?id=${encodeURIComponent(source)}`)
      carving = { source, conflict: shown.id, version: current.properties.version }
      const ha = (m2) => `${(m2 / 10000).toLocaleString('en', { maximumFractionDigits: 2 })} ha`
      $('carve-summary').textContent = `Carving conflict ${shown.id} out of ${source} gives up ${ha(dry.properties.area_lost_m2)}; ${ha(dry.properties.area_m2)} remain.`
      $('carve-summary').hidden = false
      $('carve-confirm').hidden = false
    } catch (err) {
      if (err.status !== 401) say(`Could not preview the carve-out: ${problem(err)}`, { error: true })
    }
  })
  $('carve-confirm').addEventListener('click', async () => {
    if (!carving) return
    const { source, conflict, version } = carving
    carving = null
    try {
      await api(`sources/carve?id=${encodeURIComponent(source)}`, { method: 'POST', headers: { 'content-type': 'application/json', 'if-match': `W/"${version}"` }, body: JSON.stringify({ conflicts: [conflict] }) })
      say(`Carved conflict ${conflict} out of ${source}.`)
      closeConflict()
      drawSources({ afterWrite: true })
    } catch (err) {
      if (err.status !== 401) say(`Could not carve: ${problem(err)}`, { error: true })
    }
  })

  // --- period filter ---
  $('filter').addEventListener('submit', (event) => { event.preventDefault(); writeHash(); drawSources() })
  $('clear-filter').addEventListener('click', () => { $('from').value = ''; $('to').value = ''; writeHash(); drawSources() })

  // --- upload: the file's FeatureCollection as is ---
  // Files from GIS tools often carry no feature id: the user then picks the attribute that holds
  // it (POST ?id_property=), from the attribute names the file's features have.
  let pending = null
  function prepare (file) {
    file.text().then((text) => {
      let parsed = null
      try { parsed = JSON.parse(text) } catch {}
      const features = parsed && Array.isArray(parsed.features) ? parsed.features : parsed && parsed.type === 'Feature' ? [parsed] : []
      const withoutId = features.filter((f) => f && (f.id === undefined || f.id === null)).length
      $('id-pick').hidden = true
      if (withoutId === 0) return upload(file.name, text, parsed, '')
      const names = [...new Set(features.flatMap((f) => f && f.properties && typeof f.properties === 'object' ? Object.keys(f.properties) : []))]
        .filter((n) => n !== 'start_at' && n !== 'end_at')
      const select = $('id-property')
      select.replaceChildren(...names.map((n) => {
        const option = document.createElement('option')
        option.value = n
        option.textContent = n
        return option
      }))
      const guess = names.find((n) => /(^|_)(id|fid|no|nr|number|code|key)$/i.test(n))
      if (guess) select.value = guess
      pending = { name: file.name, text, parsed }
      $('id-pick').hidden = names.length === 0
      say(names.length > 0
        ? `${file.name}: ${withoutId} of ${features.length} features have no id. Pick the attribute that holds each feature's id ("Id from"), then Upload.`
        : `${file.name}: ${withoutId} of ${features.length} features have no id and no attributes to take one from: give each Feature an "id".`, { error: names.length === 0 })
    })
  }
  $('id-upload').addEventListener('click', () => {
    if (!pending) return
    const { name, text, parsed } = pending
    pending = null
    $('id-pick').hidden = true
    upload(name, text, parsed, $('id-property').value)
  })
  /** "Feature 2 (NL-2): the reason (/features/2/geometry/…)" for a detail that names a feature. */
  function reason (d) {
    const where = d.pointer ? ` (${d.pointer})` : ''
    if (typeof d.feature_index !== 'number') return `${d.pointer || ''}${d.pointer ? ': ' : ''}${d.message || ''}`
    return `Feature ${d.feature_index}${d.feature_id !== undefined ? ` (${d.feature_id})` : ''}: ${d.message || 'refused'}${where}`
  }
  async function upload (name, text, parsed, idProperty) {
    if (highlightLayer) { highlightLayer.remove(); highlightLayer = null }
    try {
      const query = idProperty ? `?id_property=${encodeURIComponent(idProperty)}` : ''
      const body = await api(`sources${query}`, { method: 'POST', headers: { 'content-type': 'application/geo+json' }, body: text })
      const ids = (body.sources || []).map((s) => `${s.id} (${s.feature_id})`)
      say(`${name}: ${body.message}`, { details: ids })
      // The file's areas in view: a file from disk may lie anywhere, and a refused one is shown too.
      fitTo(parsed && Array.isArray(parsed.features) ? parsed.features : parsed ? [parsed] : [])
      drawSources({ afterWrite: true })
    } catch (err) {
      if (err.status === 401) return
      const details = err.body && Array.isArray(err.body.details) ? err.body.details : []
      say(`${name} was not registered: ${err.message} (${err.status || 'no answer'})`, {
        error: true,
        details: details.map(reason)
      })
      highlight(parsed, details)
    }
  }
  /** The view over these features' areas (Polygons and MultiPolygons). */
  function fitTo (features) {
    const shapes = features.filter((f) => f && f.geometry && (f.geometry.type === 'Polygon' || f.geometry.type === 'MultiPolygon'))
    if (shapes.length === 0) return
    try {
      const bounds = L.geoJSON({ type: 'FeatureCollection', features: shapes.map((f) => ({ type: 'Feature', properties: {}, geometry: f.geometry })) }).getBounds()
      if (bounds.isValid()) map.fitBounds(bounds, { padding: [30, 30], maxZoom: 14 })
    } catch { /* a geometry Leaflet cannot read: the tiles show what was stored */ }
  }
  // The features a rejection points at (/features/N/…), drawn dashed where they have a geometry.
  function highlight (collection, details) {
    if (!collection || !Array.isArray(collection.features)) return
    const indexes = new Set(details.map((d) => /^\/features\/(\d+)/.exec(d.pointer || '')).filter(Boolean).map((m) => Number(m[1])))
    const shapes = [...indexes].map((i) => collection.features[i]).filter((f) => f && f.geometry && (f.geometry.type === 'Polygon' || f.geometry.type === 'MultiPolygon'))
    if (shapes.length === 0) return
    try {
      highlightLayer = L.geoJSON({ type: 'FeatureCollection', features: shapes.map((f) => ({ type: 'Feature', properties: {}, geometry: f.geometry })) }, {
        style: () => Object.assign({ className: 'sr-rejected' }, STYLE.rejected),
        interactive: false
      }).addTo(map)
      map.fitBounds(highlightLayer.getBounds(), { padding: [30, 30], maxZoom: 14 })
    } catch { /* a geometry Leaflet cannot draw: the message says why */ }
  }
  $('upload').addEventListener('change', (event) => {
    const file = event.target.files[0]
    if (file) prepare(file)
    event.target.value = ''
  })
  const mapDiv = $('map')
  mapDiv.addEventListener('dragover', (event) => { event.preventDefault(); mapDiv.classList.add('dropping') })
  mapDiv.addEventListener('dragleave', () => mapDiv.classList.remove('dropping'))
  mapDiv.addEventListener('drop', (event) => {
    event.preventDefault()
    mapDiv.classList.remove('dropping')
    const file = event.dataTransfer.files[0]
    if (file) prepare(file)
  })

  // --- API keys: the signed-in user's own; a new key is shown once and never kept ---
  const day = (iso) => (iso ? iso.slice(0, 16).replace('T', ' ') : '')
  function closeKeys () {
    $('keys').hidden = true
    $('key-value').value = ''
    $('key-new').hidden = true
  }
  async function loadKeys () {
    try {
      // Admins would get every account's keys without account_id: the page shows one's own.
      const body = await api(session.sub ? `api-keys?account_id=${encodeURIComponent(session.sub)}` : 'api-keys')
      const items = body.api_keys.map((k) => {
        const li = document.createElement('li')
        li.setAttribute('data-key-id', k.id)
        const title = document.createElement('strong')
        title.textContent = `${k.name} (${k.scope})`
        const meta = document.createElement('span')
        meta.className = 'meta'
        meta.textContent = [
          `${k.prefix}…`,
          `created ${day(k.created_at)}`,
          k.expires_at ? `${k.expired ? 'expired' : 'expires'} ${day(k.expires_at)}` : 'no expiry',
          k.last_used_at ? `last used ${day(k.last_used_at)}` : 'never used'
        ].join(' · ')
        const revoke = document.createElement('button')
        revoke.type = 'button'
        revoke.className = 'danger'
        revoke.textContent = 'Revoke'
        revoke.setAttribute('aria-label', `Revoke key ${k.name}`)
        revoke.addEventListener('click', () => revokeKey(k))
        li.append(title, revoke, meta)
        return li
      })
      $('key-list').replaceChildren(...(items.length > 0 ? items : [Object.assign(document.createElement('li'), { textContent: 'No keys yet.' })]))
    } catch (err) {
      if (err.status !== 401) say(`Could not list your API keys: ${err.message}`, { error: true })
    }
  }
  async function revokeKey (k) {
    if (!confirm(`Revoke the key "${k.name}" (${k.prefix}…)? Clients using it stop working.`)) return
    try {
      await api(`api-keys/?id=${encodeURIComponent(k.id)}`, { method: 'DELETE' })
      if ($('key-value').value.startsWith(k.prefix)) { $('key-value').value = ''; $('key-new').hidden = true }
      say(`Revoked the key ${k.name}.`)
      await loadKeys()
    } catch (err) {
      if (err.status !== 401) say(`Could not revoke the key: ${err.message} (${err.status})`, { error: true })
    }
  }
  $('keys-open').addEventListener('click', async () => {
    $('keys').hidden = false
    $('key-name').focus()
    await loadKeys()
  })
  $('keys-close').addEventListener('click', closeKeys)
  $('key-form').addEventListener('submit', async (event) => {
    event.preventDefault()
    const body = { name: $('key-name').value, scope: $('key-scope').value }
    if ($('key-expires').value) body.expires_at = `${$('key-expires').value}T23:59:59Z`
    try {
      const created = await api('api-keys', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
      $('key-value').value = created.key
      $('key-new').hidden = false
      $('key-value').select()
      $('key-form').reset()
      await loadKeys()
    } catch (err) {
      if (err.status !== 401) say(`Could not create the key: ${err.message} (${err.status})`, { error: true })
    }
  })

  // --- the workspace ---
  async function showWorkspace () {
    $('sign-in').hidden = true
    $('workspace').hidden = false
    $('sign-out').hidden = false
    $('keys-open').hidden = false
    $('who').textContent = `${session.org || ''} · ${session.role || ''}`
    $('map').setAttribute('data-loading', 'true')
    filterFromUrl()
    await createMap()
    map.invalidateSize()
    const bbox = (new URLSearchParams(location.search).get('bbox') || '').split(',').map(Number)
    if (!fittedOnce && bbox.length === 4 && bbox.every(Number.isFinite) && bbox[0] <= bbox[2]) {
      // A link to map?bbox=… (the items page for people no longer redirects here): that box is the first view.
      fittedOnce = true
      map.fitBounds([[bbox[1], bbox[0]], [bbox[3], bbox[2]]])
    }
    const fit = !fittedOnce
    fittedOnce = true
    await readCollection(fit)
    if (session) drawSources(); else loadingState()
  }

  session = loadSession()
  if (session) { armExpiry(); showWorkspace() } else showSignIn()
})()
