// The pages for people (f=html on the landing page, the collections, the items and one item):
// reads the page's own URL as JSON with the map page's session (its token in sessionStorage,
// this tab's, as map.js keeps it) and shows it: properties as a table, the features on a small
// Leaflet map, the other formats as downloads (fetched with the token: a link would send
// none). Without a session, or when the service refuses it, it offers the sign-in (POST /token),
// kept the way the map page keeps it.
'use strict'
;(function () {
  const TOKEN_KEY = 'source-registry-token'
  const root = document.getElementById('browse-script').dataset.root
  const content = document.getElementById('content')
  const FORMATS = [['geojson', 'GeoJSON', 'geojson'], ['geojsonseq', 'GeoJSON text sequence', 'geojsons'], ['csv', 'CSV', 'csv'], ['fgb', 'FlatGeobuf', 'fgb']]

  function session () {
    try {
      const s = JSON.parse(sessionStorage.getItem(TOKEN_KEY) || 'null')
      return s && s.expiresAt > Date.now() ? s : null
    } catch { return null }
  }

  function el (tag, attrs, ...children) {
    const e = document.createElement(tag)
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v)
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)))
    return e
  }

  /** This page's URL with f set. */
  function withFormat (f, href) {
    const u = new URL(href || location.href)
    u.searchParams.set('f', f)
    return u
  }

  async function get (url) {
    const s = session()
    const headers = { accept: 'application/json' }
    if (s) headers.authorization = `Bearer ${s.token}`
    return fetch(url, { headers })
  }

  function signIn (why) {
    content.replaceChildren()
    const form = el('form', { class: 'sign-in', id: 'sign-in-form' },
      el('p', {}, why),
      el('label', { for: 'email' }, 'E-mail'), el('input', { id: 'email', type: 'email', autocomplete: 'username', required: '' }),
      el('label', { for: 'password' }, 'Password'), el('input', { id: 'password', type: 'password', autocomplete: 'current-password', required: '' }),
      el('button', { type: 'submit' }, 'Sign in'))
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault()
      const res = await fetch(`${root}token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: form.email.value, password: form.password.value }) })
      const body = await res.json().catch(() => ({}))
      if (!res.ok) { form.prepend(el('p', { class: 'error' }, body.message || `Sign-in failed (${res.status})`)); return }
      const payload = JSON.parse(atob(body.token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')))
      sessionStorage.setItem(TOKEN_KEY, JSON.stringify({ token: body.token, expiresAt: Date.now() + body.expires_in * 1000, role: payload.role, org: payload.org, sub: payload.sub }))
      show()
    })
    content.append(form)
  }

  function valueText (v) {
    return v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v)
  }

  function linkList (links) {
    return el('ul', {}, ...(links || []).map((l) => el('li', {}, el('a', { href: l.type === 'application/json' || l.type === 'application/geo+json' ? withFormat('html', l.href) : l.href }, l.title || l.rel), ` (${l.rel}, ${l.type || ''})`)))
  }

  function smallMap (geojson) {
    const div = el('div', { class: 'small-map', id: 'small-map' })
    content.append(div)
    const map = L.map(div)
    const layer = L.geoJSON(geojson).addTo(map)
    const bounds = layer.getBounds()
    if (bounds.isValid()) map.fitBounds(bounds, { maxZoom: 16 })
    else map.setView([0, 0], 1)
    fetch(`${root}map/config.json`).then((r) => r.json()).then((c) => {
      if (c.tileUrl && c.tileUrl !== 'none') L.tileLayer(c.tileUrl, { attribution: c.attribution }).addTo(map)
    }).catch(() => {})
  }

  function downloads () {
    const box = el('p', { class: 'formats' }, 'Download: ')
    for (const [f, title, ext] of FORMATS) {
      const b = el('button', { type: 'button', 'data-format': f }, title)
      b.addEventListener('click', async () => {
        const res = await get(withFormat(f))
        if (!res.ok) { box.append(el('span', { class: 'error' }, ` ${title}: ${res.status}`)); return }
        const a = el('a', { href: URL.createObjectURL(await res.blob()), download: `sources.${ext}` })
        document.body.append(a)
        a.click()
        a.remove()
      })
      box.append(b)
    }
    content.append(box)
  }

  function featureTable (features) {
    const names = []
    for (const f of features) for (const k of Object.keys(f.properties || {})) if (!names.includes(k)) names.push(k)
    return el('table', { id: 'features' },
      el('thead', {}, el('tr', {}, el('th', {}, 'id'), ...names.map((n) => el('th', {}, n)))),
      el('tbody', {}, ...features.map((f) => el('tr', {},
        el('td', {}, el('a', { href: withFormat('html', new URL(encodeURIComponent(f.id), location.href.split('?')[0] + '/')) }, f.id)),
        ...names.map((n) => el('td', {}, valueText(f.properties[n])))))))
  }

  function render (doc) {
    content.replaceChildren()
    if (doc.type === 'FeatureCollection') {
      content.append(el('h2', {}, `Sources (${doc.numberReturned}${doc.numberMatched !== undefined ? ` of ${doc.numberMatched}` : ''})`))
      smallMap(doc)
      downloads()
      content.append(featureTable(doc.features))
      const next = (doc.links || []).find((l) => l.rel === 'next')
      if (next) content.append(el('p', {}, el('a', { href: withFormat('html', next.href), rel: 'next' }, 'Next page')))
    } else if (doc.type === 'Feature') {
      content.append(el('h2', {}, `Source ${doc.id}`))
      smallMap(doc)
      content.append(el('table', { id: 'properties' }, el('tbody', {}, ...Object.entries(doc.properties || {}).map(([k, v]) => el('tr', {}, el('th', {}, k), el('td', {}, valueText(v)))))))
      content.append(el('p', {}, el('a', { href: withFormat('json') }, 'This source as GeoJSON')))
    } else if (Array.isArray(doc.collections)) {
      content.append(el('h2', {}, 'Collections'))
      for (const c of doc.collections) content.append(el('h3', {}, c.title || c.id), el('p', {}, c.description || ''), linkList(c.links))
    } else {
      content.append(el('h2', {}, doc.title || doc.id || 'Source Registry'), el('p', {}, doc.description || ''))
      if (doc.extent && doc.extent.spatial) content.append(el('p', {}, `Extent: ${JSON.stringify(doc.extent.spatial.bbox)}`))
      content.append(linkList(doc.links))
    }
  }

  async function show () {
    content.replaceChildren(el('p', {}, 'Loading…'))
    const s = session()
    document.getElementById('who').textContent = s ? `${s.sub || ''} (${s.org || ''})` : ''
    const res = await get(withFormat('json'))
    if (res.status === 401) { signIn(s ? 'The service no longer accepts your session: sign in again.' : 'Sign in to see this page (or sign in on the map page first).'); return }
    const body = await res.json().catch(() => null)
    if (!res.ok) { content.replaceChildren(el('p', { class: 'error' }, `${res.status}: ${body && body.message ? body.message : res.statusText}`)); return }
    render(body)
  }

  show()
})()
