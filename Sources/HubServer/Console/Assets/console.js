// NotificationHub admin console.
//
// Every request is an ordinary REST call to the hub's API, signed with a SharedAccessSignature token minted here with
// Web Crypto (HMAC-SHA256, the format `hub token` prints). The key is imported as a non-extractable CryptoKey and
// kept, with the token, in this module's memory only: never in a cookie, in storage or in a URL.
//
// Everything shown comes from the API and may be attacker-controlled (installation ids, tags, reasons): it is put on
// the page with DOM APIs and textContent only.

const session = {
  hub: null,
  keyName: null,
  key: null, // a non-extractable CryptoKey
  token: null,
  tokenExpiry: 0,
  description: null,
};

const TOKEN_SECONDS = 3600;
const encoder = new TextEncoder();

// MARK: DOM helpers

const $ = (id) => document.getElementById(id);

/** Creates an element: attributes (never data-derived names), then children as nodes or text. */
function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'class') element.className = value;
    else if (name.startsWith('on')) element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

function svg(tag, attributes = {}, ...children) {
  const element = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== null && value !== undefined) element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

function fill(tbody, rows, columns, emptyText) {
  if (rows.length === 0) {
    tbody.replaceChildren(h('tr', {}, h('td', { class: 'empty', colspan: columns }, emptyText)));
  } else {
    tbody.replaceChildren(...rows);
    labelCells(tbody.parentElement);
  }
}

/** Gives each body cell its column's heading as `data-label`, which the narrow layout shows beside the value. */
function labelCells(table) {
  const headings = [...(table.tHead?.rows[0]?.cells ?? [])].map((cell) => cell.textContent);
  for (const row of table.tBodies[0]?.rows ?? []) {
    [...row.cells].forEach((cell, index) => {
      if (headings[index]) cell.dataset.label = headings[index];
    });
  }
}

function facts(dl, entries) {
  dl.replaceChildren(...entries.filter(([, value]) => value !== undefined).flatMap(([term, value]) => [
    h('dt', {}, term), h('dd', {}, value ?? '—'),
  ]));
}

function formatTime(text) {
  if (!text) return '—';
  const date = new Date(text);
  if (Number.isNaN(date.getTime())) return String(text);
  const pad = (n) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

function number(value) {
  return Number(value ?? 0).toLocaleString('en-US');
}

function badge(text, kind) {
  return h('span', { class: `badge ${kind ?? ''}` }, text);
}

function stateBadge(state) {
  const kinds = {
    Completed: 'good', Processing: 'busy', Enqueued: 'busy', Scheduled: '', NoTargetFound: 'warn',
    Abandoned: 'bad', Cancelled: '',
  };
  return badge(state, kinds[state] ?? '');
}

function tagChips(tags) {
  return (tags ?? []).map((tag) => h('span', { class: 'tag' }, tag));
}

function showAlert(message) {
  const alert = $('alert');
  alert.textContent = message;
  alert.hidden = !message;
}

// MARK: Tokens and API calls

/** Percent-encodes like the hub: everything but ASCII letters, digits and -._~ */
function percentEncode(text) {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

function base64(bytes) {
  let binary = '';
  for (const byte of new Uint8Array(bytes)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** A SharedAccessSignature for this hub's URL: HMAC-SHA256 over `sr + "\n" + se`, as `hub token` makes. */
async function token() {
  const now = Math.floor(Date.now() / 1000);
  if (session.token && session.tokenExpiry - now > 300) return session.token;
  const resource = percentEncode(`${location.origin}/${session.hub}`.toLowerCase());
  const expiry = now + TOKEN_SECONDS;
  const signature = await crypto.subtle.sign('HMAC', session.key, encoder.encode(`${resource}\n${expiry}`));
  session.token = `SharedAccessSignature sr=${resource}&sig=${percentEncode(base64(signature))}` +
    `&se=${expiry}&skn=${percentEncode(session.keyName)}`;
  session.tokenExpiry = expiry;
  return session.token;
}

class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/**
 * A query string: each name and value percent-encoded, a space as `%20`. (URLSearchParams writes a space as `+`,
 * which only form-aware servers read as a space.) Empty, null and undefined values are left out.
 */
function queryString(query) {
  const pairs = Object.entries(query ?? {}).filter(([, value]) => value !== undefined && value !== null && value !== '')
    .map(([name, value]) => `${percentEncode(name)}=${percentEncode(String(value))}`);
  return pairs.length ? '?' + pairs.join('&') : '';
}

/** One REST call to the signed-in hub: `path` is below `/{hub}`. */
async function api(method, path, { query, headers = {}, body } = {}) {
  const response = await fetch(`/${encodeURIComponent(session.hub)}${path}${queryString(query)}`, {
    method,
    headers: { Authorization: await token(), Accept: 'application/json', ...headers },
    body,
    cache: 'no-store',
    credentials: 'omit',
    redirect: 'error',
    referrerPolicy: 'no-referrer',
  });
  const text = await response.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = text; }
  }
  if (!response.ok) {
    const error = data && typeof data === 'object' ? data.error : null;
    throw new APIError(response.status, error?.code ?? 'HTTP' + response.status, error?.message ?? response.statusText);
  }
  return { status: response.status, data, headers: response.headers };
}

function describeError(error) {
  if (error instanceof APIError) return `${error.code}: ${error.message}`;
  return String(error?.message ?? error);
}

// MARK: Sign-in

function parseConnectionString(text) {
  const fields = {};
  for (const part of text.split(';')) {
    const equals = part.indexOf('=');
    if (equals > 0) fields[part.slice(0, equals).trim().toLowerCase()] = part.slice(equals + 1).trim();
  }
  return { keyName: fields.sharedaccesskeyname, key: fields.sharedaccesskey, hub: fields.entitypath };
}

async function signIn(event) {
  event.preventDefault();
  showAlert('');
  if (!window.isSecureContext || !window.crypto?.subtle) {
    showAlert('This page cannot sign requests here: browsers allow Web Crypto only on https or localhost. ' +
      'Serve the hub with server.tls, or open the console on 127.0.0.1.');
    return;
  }
  const form = $('sign-in-form');
  const connection = form.elements.connection.value.trim();
  let { keyName, key, hub } = connection ? parseConnectionString(connection) : {
    keyName: form.elements.keyName.value.trim(), key: form.elements.key.value,
  };
  hub = form.elements.hub.value.trim() || hub;
  if (!hub) return showAlert('Give the hub\'s name (the first path segment of its API, e.g. demo).');
  if (!keyName || !key) {
    return showAlert(connection
      ? 'The connection string needs SharedAccessKeyName and SharedAccessKey.'
      : 'Give a connection string, or a key name and its key.');
  }
  const button = $('sign-in-submit');
  button.disabled = true;
  try {
    session.hub = hub;
    session.keyName = keyName;
    session.key = await crypto.subtle.importKey('raw', encoder.encode(key), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    session.token = null;
    const { data } = await api('GET', '/description');
    session.description = data;
    form.reset();
    $('who').textContent = `${data.name} · ${keyName}`;
    $('nav').hidden = false;
    $('sign-out').hidden = false;
    if (!location.hash || location.hash === '#/' || location.hash === '#/sign-in') location.hash = '#/hub';
    else route();
  } catch (error) {
    signOut(false);
    if (error instanceof APIError && error.status === 403) {
      showAlert('This key lacks the Manage right the console needs.');
    } else {
      showAlert(`Could not sign in. ${describeError(error)}`);
    }
  } finally {
    button.disabled = false;
  }
}

function signOut(navigate = true) {
  stopTimers();
  session.hub = null;
  session.keyName = null;
  session.key = null;
  session.token = null;
  session.tokenExpiry = 0;
  session.description = null;
  $('who').textContent = '';
  $('nav').hidden = true;
  $('sign-out').hidden = true;
  for (const form of document.forms) form.reset();
  if (navigate) {
    showAlert('');
    if (location.hash !== '#/sign-in') location.hash = '#/sign-in';
    else route();
  }
}

// MARK: Routing

const timers = new Set();

function every(milliseconds, action) {
  let stopped = false;
  let handle = null;
  const tick = async () => {
    if (stopped) return;
    try { await action(); } catch (error) { showAlert(describeError(error)); }
    if (!stopped) handle = setTimeout(tick, milliseconds);
  };
  const timer = { stop() { stopped = true; clearTimeout(handle); } };
  timers.add(timer);
  handle = setTimeout(tick, milliseconds);
  return timer;
}

function stopTimers() {
  for (const timer of timers) timer.stop();
  timers.clear();
}

function show(page) {
  for (const section of document.querySelectorAll('.page')) section.hidden = section.id !== `page-${page}`;
  const current = { installation: 'installations', notification: 'notifications' }[page] ?? page;
  for (const link of document.querySelectorAll('#nav a')) {
    if (link.dataset.page === current) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  $(`${page}-title`)?.focus();
}

async function route() {
  stopTimers();
  if (!session.key) {
    show('sign-in');
    return;
  }
  const [path, search = ''] = location.hash.replace(/^#/, '').split('?');
  const [, page = 'hub', ...rest] = path.split('/');
  const argument = rest.length && rest.join('/') ? decodeURIComponent(rest.join('/')) : null;
  showAlert('');
  try {
    switch (page) {
      case 'installations': return argument === null ? await showInstallations() : await showInstallation(argument);
      case 'send': return showSend(new URLSearchParams(search));
      case 'notifications': return argument === null ? await showNotifications() : await showNotification(argument);
      case 'rates': return await showRates();
      default: return await showHub();
    }
  } catch (error) {
    showAlert(describeError(error));
  }
}

// MARK: Hub

// Each page starts its poller before its first await: route() stops the pollers it finds, so one started after an
// await could outlive a navigation made meanwhile.

async function showHub() {
  show('hub');
  every(5000, renderHub);
  await renderHub();
}

/** Installations per platform, from the hub's counters (no scan of the store). */
async function renderCounts() {
  const { data } = await api('GET', '/installationcounts');
  const cells = (entry) => [
    h('td', { class: 'number' }, number(entry.installations)),
    h('td', { class: 'number' }, number(entry.expired)),
    h('td', { class: 'number' }, number(entry.registrations)),
  ];
  const rows = data.platforms.map((entry) => h('tr', {}, h('td', {}, entry.platform), ...cells(entry)));
  if (rows.length) rows.unshift(h('tr', { class: 'total' }, h('td', {}, 'All platforms'), ...cells(data)));
  fill($('hub-counts').tBodies[0], rows, 4, 'No installations yet.');
}

/** Devices a send to a tag expression reaches now. */
async function countAudience(event) {
  event.preventDefault();
  showAlert('');
  const expression = $('hub-count-form').elements.tags.value.trim();
  if (!expression) return showAlert('Give a tag expression to count.');
  try {
    const { data } = await api('GET', '/installationcounts', { query: { tags: expression } });
    const count = data.tags[0]?.audience ?? 0;
    $('hub-count-result').textContent =
      `${number(count)} device${count === 1 ? '' : 's'} match ${expression} (channels not expired).`;
  } catch (error) {
    $('hub-count-result').textContent = '';
    showAlert(describeError(error));
  }
}

function lastReload(configuration) {
  const reload = configuration.lastReload;
  if (!reload) return 'none since start';
  let text = `${reload.result} at ${formatTime(reload.at)}`;
  if (reload.problems) text += ` (${reload.problems} problem${reload.problems === 1 ? '' : 's'}: the running configuration stays)`;
  const restart = configuration.restartRequired || [];
  if (restart.length) text += `; needs a restart: ${restart.join(', ')}`;
  return text;
}

async function renderHub() {
  const counted = renderCounts().catch((error) => showAlert(describeError(error)));
  const { data } = await api('GET', '/description');
  session.description = data;
  $('hub-title').textContent = `Hub ${data.name}`;
  const storage = data.storage;
  facts($('hub-facts'), [
    ['Platforms', data.platforms.join(', ')],
    ['Formats', data.formats.join(', ')],
    ['Storage', storage.kind + (storage.path ? ` (${storage.path})` : '') +
      (storage.host ? ` (${storage.host}/${storage.database}, schema ${storage.schema})` : '')],
    ['Secure push', data.securePush ? 'on' : 'off'],
    ['Feedback webhook', data.feedbackWebhook ? 'on' : 'off'],
    ['Configuration loaded', formatTime(data.configuration.loadedAt)],
    ['Last reload', lastReload(data.configuration)],
  ]);
  const stateKinds = { idle: '', delivering: 'good', failing: 'bad' };
  fill($('hub-adapters').tBodies[0], data.adapters.map((adapter) => h('tr', {},
    h('td', {}, adapter.type),
    h('td', {}, adapter.platforms.join(', ')),
    h('td', {}, Object.keys(adapter.formats).sort().join(', ')),
    h('td', { class: 'number' }, `${number(adapter.maximumPayloadBytes)} B`),
    h('td', {}, badge(adapter.state, stateKinds[adapter.state])),
    h('td', {}, Object.entries(adapter.recentOutcomes).sort().map(([name, count]) => `${name} ${number(count)}`).join(', ') || '—'),
    h('td', {}, formatTime(adapter.lastDeliveryTime)),
  )), 7, 'No adapters.');
  fill($('hub-keys').tBodies[0], data.keys.map((key) => h('tr', {},
    h('td', {}, key.name),
    h('td', {}, key.rights.join(', ')),
    h('td', {}, key.hasSecondaryKey ? 'set' : '—'),
  )), 3, 'No keys.');
  const limits = data.limits;
  facts($('hub-limits'), [
    ['Tags per installation', number(limits.tagsPerInstallation)],
    ['Tags in an expression', `${limits.tagExpressionMaximumTags} (${limits.tagExpressionMaximumTagsOrOnly} if only ||)`],
    ['Expression depth', number(limits.tagExpressionMaximumDepth)],
    ['Request body', `${number(limits.maximumRequestBytes)} B`],
    ['Test send', `${limits.testSendDevices} devices`],
    ['Batch send', `${number(limits.batchSendDevices)} handles`],
  ]);
  const delivery = data.delivery;
  facts($('hub-delivery'), [
    ['Page size', number(delivery.pageSize)],
    ['Batch size', number(delivery.batchSize)],
    ['Concurrency', `${delivery.concurrency} calls per notification, ${delivery.parallelNotifications} notifications`],
    ['Partitions', number(delivery.partitions)],
    ['Rate limit', delivery.rateLimitPerSecond ? `${number(delivery.rateLimitPerSecond)} per second` : 'none'],
    ['Attempts', `${delivery.maximumAttempts}, abandoned after ${delivery.abandonAfterSeconds} s`],
    ['Expired channels', delivery.expiredChannelPolicy],
  ]);
  await counted;
}

// MARK: Installations

const installationsView = { tags: '', top: 25, pages: [null], page: 0 };

async function showInstallations() {
  show('installations');
  const form = $('installations-form');
  form.elements.tags.value = installationsView.tags;
  form.elements.top.value = String(installationsView.top);
  await renderInstallations();
}

async function renderInstallations() {
  const summary = $('installations-summary');
  const tbody = $('installations-table').tBodies[0];
  const { data } = await api('GET', '/installations', {
    query: {
      tags: installationsView.tags, top: installationsView.top,
      continuationToken: installationsView.pages[installationsView.page],
    },
  });
  const list = data.installations ?? [];
  fill(tbody, list.map((installation) => h('tr', {},
    h('td', { class: 'break' }, h('a', { href: `#/installations/${encodeURIComponent(installation.installationId)}` }, installation.installationId)),
    h('td', {}, installation.platform),
    h('td', { class: 'break' }, installation.userId ?? '—'),
    h('td', {}, tagChips(installation.tags)),
    h('td', {}, installation.expiredPushChannel ? badge('expired', 'bad') : badge('active', 'good')),
    h('td', {}, formatTime(installation.lastUpdate)),
  )), 6, installationsView.tags ? 'No installation matches this expression.' : 'No installations yet.');
  installationsView.pages.length = installationsView.page + 1;
  if (data.continuationToken) installationsView.pages.push(data.continuationToken);
  $('installations-previous').disabled = installationsView.page === 0;
  $('installations-next').disabled = !data.continuationToken;
  const what = installationsView.tags ? `matching ${installationsView.tags}` : 'of this hub';
  summary.textContent = `Page ${installationsView.page + 1}: ${list.length} installation${list.length === 1 ? '' : 's'} ${what}.`;
}

async function searchInstallations(event) {
  event.preventDefault();
  const form = $('installations-form');
  installationsView.tags = form.elements.tags.value.trim();
  installationsView.top = Number(form.elements.top.value);
  installationsView.pages = [null];
  installationsView.page = 0;
  showAlert('');
  try { await renderInstallations(); } catch (error) { showAlert(describeError(error)); }
}

async function turnInstallationsPage(delta) {
  installationsView.page = Math.max(0, installationsView.page + delta);
  try { await renderInstallations(); } catch (error) { showAlert(describeError(error)); }
}

let shownInstallation = null;
let installationRequests = 0;

async function showInstallation(id) {
  show('installation');
  $('installation-confirm').hidden = true;
  shownInstallation = null;
  $('installation-title').textContent = `Installation ${id}`;
  // Nothing of the installation shown before stays while this one loads, or when it cannot be read.
  $('installation-facts').replaceChildren();
  $('installation-templates').replaceChildren();
  $('installation-json').textContent = '';
  $('installation-details').hidden = true;
  $('installation-status').textContent = 'Loading…';
  const request = ++installationRequests;
  let data;
  try {
    ({ data } = await api('GET', `/installations/${encodeURIComponent(id)}`));
  } catch (error) {
    if (request !== installationRequests) return;
    $('installation-status').textContent = error instanceof APIError && error.status === 404
      ? 'This hub has no installation with this id.' : 'The installation could not be read.';
    throw error;
  }
  if (request !== installationRequests) return;
  shownInstallation = data;
  $('installation-status').textContent = '';
  $('installation-details').hidden = false;
  const channel = typeof data.pushChannel === 'string' ? data.pushChannel : JSON.stringify(data.pushChannel);
  facts($('installation-facts'), [
    ['Platform', data.platform],
    ['Push channel', h('span', { class: 'mono' }, channel)],
    ['Channel', data.expiredPushChannel ? badge('expired', 'bad') : badge('active', 'good')],
    ['User', data.userId ?? '—'],
    ['Tags', data.tags?.length ? tagChips(data.tags) : '—'],
    ['Last update', formatTime(data.lastUpdate)],
    ['Expires', formatTime(data.expirationTime)],
  ]);
  const templates = Object.entries(data.templates ?? {});
  $('installation-templates').replaceChildren(templates.length === 0 ? h('p', { class: 'hint' }, 'None.') :
    h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Body'), h('th', {}, 'Tags'))),
      h('tbody', {}, templates.map(([name, template]) => h('tr', {},
        h('td', { class: 'break' }, name), h('td', {}, h('code', { class: 'break' }, template.body)), h('td', {}, tagChips(template.tags)))))));
  const templatesTable = $('installation-templates').querySelector('table');
  if (templatesTable) labelCells(templatesTable);
  $('installation-json').textContent = JSON.stringify(data, null, 2);
  const send = new URLSearchParams({ installation: data.installationId });
  const format = nativeFormat(data.platform);
  if (format) send.set('format', format);
  $('installation-send').setAttribute('href', `#/send?${send}`);
}

function askDeleteInstallation() {
  if (!shownInstallation) return;
  $('installation-confirm-text').textContent = `Delete installation ${shownInstallation.installationId}? Its device stops receiving notifications from this hub.`;
  $('installation-confirm').hidden = false;
  $('installation-confirm-keep').focus();
}

async function deleteInstallation() {
  if (!shownInstallation) return;
  try {
    await api('DELETE', `/installations/${encodeURIComponent(shownInstallation.installationId)}`);
    shownInstallation = null;
    location.hash = '#/installations';
  } catch (error) {
    showAlert(describeError(error));
  }
}

// MARK: Send

const templateSample = { body: '{"message":"Hello from the NotificationHub console"}', headers: {}, contentType: 'application/json;charset=utf-8' };

/** The sample notification of each format: the adapters' own (from the hub's description), and the template's. */
function samples() {
  const byFormat = { template: templateSample };
  for (const adapter of session.description?.adapters ?? []) {
    for (const [format, sample] of Object.entries(adapter.samples ?? {})) byFormat[format] ??= sample;
  }
  return byFormat;
}

/** A sample's headers as the form's text: one `Name: value` per line. */
function headerText(sample) {
  return Object.entries(sample?.headers ?? {}).map(([name, value]) => `${name}: ${value}`).join('\n');
}

/** The native format a device of `platform` takes: the one its adapter renders templates in, else any it accepts. */
function nativeFormat(platform) {
  const adapters = session.description?.adapters ?? [];
  for (const adapter of adapters) {
    const format = adapter.templateFormats?.[platform];
    if (format) return format;
  }
  for (const adapter of adapters) {
    for (const [format, platforms] of Object.entries(adapter.formats ?? {})) {
      if (format !== 'template' && platforms.includes(platform)) return format;
    }
  }
  return null;
}

function showSend(parameters) {
  show('send');
  const form = $('send-form');
  const select = form.elements.format;
  const formats = session.description?.formats ?? [];
  if ([...select.options].map((option) => option.value).join() !== formats.join()) {
    select.replaceChildren(...formats.map((format) => h('option', { value: format }, format)));
  }
  const installation = parameters.get('installation');
  if (installation) {
    form.elements.target.value = 'installation';
    form.elements.targetValue.value = installation;
  }
  const format = parameters.get('format');
  if (format && formats.includes(format)) select.value = format;
  hideSendConfirm();
  updateTarget();
  updateSample();
}

/** Whether `text` is blank or one of `samples`' values: nothing the user wrote, so a format change may replace it. */
function isSample(text, samples) {
  return !text.trim() || Object.values(samples).includes(text);
}

/** Puts the chosen format's sample body and headers in place of samples (or nothing); the user's own text stays. */
function updateSample() {
  const form = $('send-form');
  const format = form.elements.format.value;
  const all = samples();
  const bodies = Object.fromEntries(Object.entries(all).map(([name, sample]) => [name, sample.body]));
  const headers = Object.fromEntries(Object.entries(all).map(([name, sample]) => [name, headerText(sample)]));
  if (isSample(form.elements.body.value, bodies)) form.elements.body.value = bodies[format] ?? '';
  if (isSample(form.elements.headers.value, headers)) form.elements.headers.value = headers[format] ?? '';
}

function updateTarget() {
  const form = $('send-form');
  const target = form.elements.target.value;
  const input = form.elements.targetValue;
  $('send-target-label').textContent = target === 'installation' ? 'Installation id' : 'Tag expression';
  $('send-target-label').hidden = target === 'all';
  input.hidden = target === 'all';
}

function parseHeaders(text) {
  const headers = {};
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const colon = line.indexOf(':');
    if (colon <= 0) throw new Error(`The header line "${line.trim()}" needs the form Name: value.`);
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return headers;
}

/** Reads the send form into a request, or shows what to fix and returns null. */
function prepareSend() {
  const form = $('send-form');
  const format = form.elements.format.value;
  const target = form.elements.target.value;
  const value = form.elements.targetValue.value.trim();
  const test = form.elements.test.checked;
  let scheduleTime = null;
  if (form.elements.later.checked) {
    if (test) {
      showAlert('A scheduled send cannot be a test send: uncheck "Test send" or "Schedule".');
      return null;
    }
    const when = form.elements.time.value ? new Date(form.elements.time.value) : null;
    if (!when || Number.isNaN(when.getTime())) {
      showAlert('Give the date and time to send at.');
      return null;
    }
    if (when.getTime() <= Date.now()) {
      showAlert('The time to send at has passed; give a later one, or uncheck "Schedule".');
      return null;
    }
    scheduleTime = when;
  }
  let headers;
  try {
    headers = parseHeaders(form.elements.headers.value);
  } catch (error) {
    showAlert(error.message);
    return null;
  }
  headers['ServiceBusNotification-Format'] = format;
  if (!headers['Content-Type'] && !headers['content-type']) {
    headers['Content-Type'] = samples()[format]?.contentType ?? 'application/json;charset=utf-8';
  }
  if (target === 'tags') {
    if (!value) {
      showAlert('Give a tag expression, or choose "Every device".');
      return null;
    }
    headers['ServiceBusNotification-Tags'] = value;
  } else if (target === 'installation') {
    if (!value) {
      showAlert('Give the installation\'s id.');
      return null;
    }
    headers['ServiceBusNotification-Tags'] = `$InstallationId:{${value}}`;
  }
  if (scheduleTime) headers['ServiceBusNotification-ScheduleTime'] = scheduleTime.toISOString();
  return { format, target, value, test, scheduleTime, headers, body: form.elements.body.value };
}

let pendingSend = null;

/** Devices a send reaches now, from the hub's counters and tag index: installations and registrations whose channel
 * has not expired. */
async function audienceSize(prepared) {
  const { data } = await api('GET', '/installationcounts', {
    query: { tags: prepared.target === 'tags' ? prepared.value : undefined },
  });
  if (prepared.target === 'tags') return data.tags[0]?.audience ?? 0;
  return data.installations - data.expired + data.registrations;
}

function updateWhen() {
  $('send-when').hidden = !$('send-form').elements.later.checked;
}

function hideSendConfirm() {
  pendingSend = null;
  $('send-confirm').hidden = true;
}

/**
 * Submitting the form: a send to one installation goes at once; so does a send to a tag expression that reaches at
 * most one device. A send to every device, or to more than one, waits for a confirmation that says how many devices
 * it reaches.
 */
async function send(event) {
  event.preventDefault();
  showAlert('');
  hideSendConfirm();
  const prepared = prepareSend();
  if (!prepared) return;
  if (prepared.target === 'installation') return deliver(prepared);
  const button = $('send-submit');
  button.disabled = true;
  let audience;
  let count = null;
  try {
    count = await audienceSize(prepared);
    audience = `It reaches ${number(count)} device${count === 1 ? '' : 's'} now` +
      ' (installations and registrations whose channel has not expired; devices on platforms this format does not' +
      ' reach are skipped).';
  } catch (error) {
    if (error instanceof APIError && error.status === 400) return showAlert(describeError(error));
    audience = `The hub could not count the audience (${describeError(error)}).`;
  } finally {
    button.disabled = false;
  }
  if (prepared.target === 'tags' && count !== null && count <= 1) return deliver(prepared);
  const what = prepared.test ? 'Test send' : prepared.scheduleTime ? 'Schedule' : 'Send';
  const to = prepared.target === 'tags' ? `the devices matching ${prepared.value}` : `every device of hub ${session.hub}`;
  const when = prepared.scheduleTime ? ` for ${prepared.scheduleTime.toLocaleString()}` : '';
  const limit = prepared.test ? ` A test send delivers to at most ${session.description?.limits?.testSendDevices ?? 10} of them.` : '';
  $('send-confirm-text').textContent = `${what} this ${prepared.format} notification${when} to ${to}? ${audience}${limit}`;
  pendingSend = prepared;
  $('send-confirm').hidden = false;
  $('send-confirm-keep').focus();
}

function confirmSend() {
  const prepared = pendingSend;
  hideSendConfirm();
  if (prepared) deliver(prepared);
}

async function deliver({ test, scheduleTime, headers, body }) {
  const button = $('send-submit');
  button.disabled = true;
  const result = $('send-result');
  const outcomes = $('send-outcomes');
  try {
    const path = scheduleTime ? '/schedulednotifications' : '/messages';
    const response = await api('POST', path, { query: test ? { test: 'true' } : undefined, headers, body });
    result.hidden = false;
    if (test) {
      const data = response.data;
      $('send-result-title').textContent = 'Test send';
      $('send-result-summary').textContent = data.results.length === 0
        ? 'No device matched; nothing was sent.'
        : `${data.success} succeeded, ${data.failure} failed (delivered now, once per device; nothing is stored).`;
      outcomes.hidden = data.results.length === 0;
      fill(outcomes.tBodies[0], data.results.map((entry) => h('tr', {},
        h('td', {}, entry.applicationPlatform),
        h('td', { class: 'break' }, entry.registrationId ?? '—'),
        h('td', { class: 'mono break' }, entry.pnsHandle),
        h('td', {}, badge(entry.outcome, entry.outcome === 'Success' ? 'good' : 'bad')),
        h('td', {}, entry.reason ?? '—'),
      )), 5, '');
    } else {
      const id = response.headers.get('TrackingId') ?? (response.headers.get('Location') ?? '').split('/').pop();
      outcomes.hidden = true;
      const link = h('a', { href: `#/notifications/${encodeURIComponent(id)}`, id: 'send-result-link' }, 'Watch its delivery');
      if (scheduleTime) {
        $('send-result-title').textContent = 'Scheduled';
        const cancel = h('button', { type: 'button', id: 'send-result-cancel', class: 'danger' }, 'Cancel it');
        cancel.addEventListener('click', () => cancelNotification(id, $('send-result-summary')));
        $('send-result-summary').replaceChildren(
          'Notification ', h('code', {}, id), ` is scheduled for ${scheduleTime.toLocaleString()}. `, link, '. ', cancel);
      } else {
        $('send-result-title').textContent = 'Accepted';
        $('send-result-summary').replaceChildren('Notification ', h('code', {}, id), ' is queued for delivery. ', link, '.');
      }
    }
    result.scrollIntoView({ block: 'nearest' });
  } catch (error) {
    result.hidden = true;
    showAlert(describeError(error));
  } finally {
    button.disabled = false;
  }
}

/** Cancels a notification that has not started; says what happened in `place`. */
async function cancelNotification(id, place) {
  showAlert('');
  try {
    await api('DELETE', `/schedulednotifications/${encodeURIComponent(id)}`);
    place.replaceChildren('Notification ', h('code', {}, id), ' is cancelled; nothing was sent.');
  } catch (error) {
    showAlert(describeError(error));
  }
}

// MARK: Notifications

const notificationsView = { pages: [null], page: 0 };

function audienceText(entry) {
  if (entry.audience === 'tags') return entry.tags;
  if (entry.audience === 'direct') return `${entry.handles} ${entry.platform} handle${entry.handles === 1 ? '' : 's'}`;
  if (entry.audience === 'unknown') return 'unreadable audience';
  return 'every device';
}

function totals(outcomeCounts) {
  let delivered = 0;
  let failed = 0;
  const byOutcome = {};
  for (const counts of Object.values(outcomeCounts ?? {})) {
    for (const { name, count } of counts) {
      if (name === 'Success') delivered += count;
      else failed += count;
      byOutcome[name] = (byOutcome[name] ?? 0) + count;
    }
  }
  return { delivered, failed, byOutcome };
}

async function showNotifications() {
  show('notifications');
  notificationsView.pages = [null];
  notificationsView.page = 0;
  every(1000, async () => { if (notificationsView.page === 0) await renderNotifications(); });
  await renderNotifications();
}

async function renderNotifications() {
  const { data } = await api('GET', '/messages', {
    query: { top: 25, continuationToken: notificationsView.pages[notificationsView.page] },
  });
  fill($('notifications-table').tBodies[0], data.notifications.map((entry) => {
    const { delivered, failed, byOutcome } = totals(entry.outcomeCounts);
    return h('tr', { 'data-id': entry.notificationId },
      h('td', {}, formatTime(entry.enqueueTime)),
      h('td', { class: 'mono' }, h('a', { href: `#/notifications/${encodeURIComponent(entry.notificationId)}` }, entry.notificationId)),
      h('td', {}, entry.format),
      h('td', { class: 'break' }, audienceText(entry)),
      h('td', {}, stateBadge(entry.state)),
      h('td', { class: 'number delivered' }, number(delivered)),
      h('td', { class: 'number failed' }, number(failed)),
      h('td', {}, Object.entries(byOutcome).sort().map(([name, count]) => `${name} ${number(count)}`).join(', ') || '—'),
    );
  }), 8, 'No notifications yet.');
  notificationsView.pages.length = notificationsView.page + 1;
  if (data.continuationToken) notificationsView.pages.push(data.continuationToken);
  $('notifications-newest').disabled = notificationsView.page === 0;
  $('notifications-older').disabled = !data.continuationToken;
}

async function turnNotificationsPage(delta) {
  notificationsView.page = delta === 0 ? 0 : Math.max(0, notificationsView.page + delta);
  try { await renderNotifications(); } catch (error) { showAlert(describeError(error)); }
}

const notificationView = { id: null, feedbackNext: null, feedbackRows: [], state: null };

async function showNotification(id) {
  show('notification');
  notificationView.id = id;
  notificationView.state = null;
  notificationView.audience = undefined;
  notificationView.samples = [];
  $('notification-progress').hidden = true;
  $('notification-cancel').hidden = true;
  $('notification-title').textContent = `Notification ${id}`;
  const timer = every(1000, async () => {
    const final = await renderNotification();
    if (final) timer.stop();
  });
  if (await renderNotification()) timer.stop();
}

/** Renders the notification's telemetry; reloads its feedback when the state changed. Returns whether it is final. */
async function renderNotification() {
  const id = notificationView.id;
  const { data } = await api('GET', `/messages/${encodeURIComponent(id)}`);
  if (id !== notificationView.id) return true;
  const { delivered, failed } = totals(data.outcomeCounts);
  facts($('notification-facts'), [
    ['State', stateBadge(data.state)],
    ['Format', data.format],
    ['Platforms', (data.targetPlatforms ?? []).join(', ') || '—'],
    ['Delivered', h('span', { id: 'notification-delivered' }, number(delivered))],
    ['Failed', h('span', { id: 'notification-failed' }, number(failed))],
    ['Accepted', formatTime(data.enqueueTime)],
    ['Scheduled for', data.scheduledTime ? formatTime(data.scheduledTime) : undefined],
    ['Started', formatTime(data.startTime)],
    ['Finished', formatTime(data.endTime)],
    ['Reason', data.reason ? data.reason : undefined],
    ['Trace', data.traceId ? h('code', { id: 'notification-trace', class: 'break' }, data.traceId) : undefined],
  ]);
  const receipts = Object.entries(data.receiptCounts ?? {}).sort(([a], [b]) => a.localeCompare(b));
  $('notification-receipts-section').hidden = receipts.length === 0;
  fill($('notification-receipts').tBodies[0], receipts.map(([platform, kinds]) => h('tr', {},
    h('td', {}, platform),
    h('td', { class: 'number' }, number(kinds.delivered ?? 0)),
    h('td', { class: 'number' }, number(kinds.opened ?? 0)),
    h('td', { class: 'number' }, number(kinds.dismissed ?? 0)),
  )), 4, '');
  const rows = [];
  for (const platform of Object.keys(data.outcomeCounts ?? {}).sort()) {
    for (const { name, count } of data.outcomeCounts[platform]) {
      rows.push(h('tr', {}, h('td', {}, platform), h('td', {}, badge(name, name === 'Success' ? 'good' : 'bad')),
        h('td', { class: 'number' }, number(count))));
    }
  }
  fill($('notification-counts').tBodies[0], rows, 3, data.state === 'Enqueued' ? 'Waiting for a worker.' : 'No deliveries yet.');
  const final = ['Completed', 'Abandoned', 'NoTargetFound', 'Cancelled'].includes(data.state);
  $('notification-cancel').hidden = !['Scheduled', 'Enqueued'].includes(data.state);
  await renderProgress(data, delivered + failed, final);
  if (data.state !== notificationView.state || !final) {
    notificationView.state = data.state;
    await loadFeedback(true);
  }
  return final;
}

/**
 * Fan-out progress while a notification runs: devices done of its audience (counted once, from the hub's counters
 * and tag index, when the notification is first seen running), the rate over the last ten seconds of polls, and the
 * time left at that rate.
 */
async function renderProgress(data, done, final) {
  const view = notificationView;
  const running = data.state === 'Processing';
  $('notification-progress').hidden = !running;
  if (!running) return;
  if (view.audience === undefined) {
    view.audience = null;
    try {
      const { data: counts } = await api('GET', '/installationcounts', { query: { tags: data.tags ?? undefined } });
      view.audience = data.tags ? counts.tags[0]?.audience ?? null : counts.installations - counts.expired + counts.registrations;
    } catch {
      view.audience = null;
    }
  }
  const now = Date.now();
  view.samples.push({ time: now, done });
  while (view.samples.length > 2 && now - view.samples[0].time > 10000) view.samples.shift();
  const first = view.samples[0];
  const rate = now > first.time ? ((done - first.done) * 1000) / (now - first.time) : 0;
  const total = view.audience && view.audience >= done ? view.audience : null;
  const parts = [total ? `${number(done)} of ${number(total)} devices` : `${number(done)} devices done`];
  if (rate > 0) parts.push(`${number(Math.round(rate))} per second`);
  if (total && rate > 0) {
    const seconds = Math.ceil((total - done) / rate);
    parts.push(seconds >= 90 ? `about ${Math.ceil(seconds / 60)} min left` : `about ${seconds} s left`);
  }
  $('notification-progress-text').textContent = parts.join(' · ');
  $('notification-progress-bar').style.width = total ? `${Math.min(100, (100 * done) / total).toFixed(1)}%` : '0';
}

async function loadFeedback(fromStart) {
  const id = notificationView.id;
  if (fromStart) {
    notificationView.feedbackNext = null;
    notificationView.feedbackRows = [];
  }
  const { data } = await api('GET', `/messages/${encodeURIComponent(id)}/feedback`, {
    query: { top: 100, continuationToken: notificationView.feedbackNext },
  });
  if (id !== notificationView.id) return;
  notificationView.feedbackRows.push(...data.failures.map((failure) => h('tr', {},
    h('td', {}, formatTime(failure.time)),
    h('td', {}, failure.platform),
    h('td', {}, badge(failure.outcome, 'bad')),
    h('td', {}, failure.reason ?? '—'),
    h('td', { class: 'break' }, failure.installationId
      ? h('a', { href: `#/installations/${encodeURIComponent(failure.installationId)}` }, failure.installationId) : '—'),
    h('td', { class: 'mono break' }, failure.pnsHandle),
  )));
  notificationView.feedbackNext = data.continuationToken ?? null;
  fill($('notification-feedback').tBodies[0], notificationView.feedbackRows, 6, 'No failed devices.');
  $('notification-feedback-more').hidden = !notificationView.feedbackNext;
}

// MARK: Rates

const palette = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22'];

let ratesRequests = 0;

function showRates() {
  show('rates');
  return watchRates();
}

/** Starts the page's one poller for the chosen window (replacing any other) and renders at once. */
function watchRates() {
  stopTimers();
  const [, step] = $('rates-window').value.split(':').map(Number);
  every(step > 1 ? 5000 : 1000, renderRates);
  return renderRates();
}

/**
 * Per-second counts, summed into buckets of `step` seconds that end with the window (the first bucket may be
 * shorter). Each bucket's average divides its sum by the seconds it covers.
 */
function bucketed(counts, step) {
  const buckets = Math.ceil(counts.length / step);
  const missing = buckets * step - counts.length;
  const sums = new Array(buckets).fill(0);
  counts.forEach((count, index) => { sums[Math.floor((index + missing) / step)] += count; });
  return sums.map((sum, bucket) => sum / (bucket === 0 ? step - missing : step));
}

async function renderRates() {
  const request = ++ratesRequests;
  const [seconds, step] = $('rates-window').value.split(':').map(Number);
  // Per-second counts: the chart averages them per step, while the peak is the busiest single second.
  const { data } = await api('GET', '/rates', { query: { seconds, step: 1 } });
  if (request !== ratesRequests || $('page-rates').hidden) return;
  const chart = $('rates-chart');
  const width = Math.max(320, Math.round(chart.getBoundingClientRect().width || 960));
  const height = 320;
  const margin = { left: 56, right: 16, top: 16, bottom: 28 };
  const plotWidth = width - margin.left - margin.right;
  const plotHeight = height - margin.top - margin.bottom;
  chart.setAttribute('viewBox', `0 0 ${width} ${height}`);
  const buckets = Math.ceil(data.seconds / step);
  const series = data.series.map((entry, index) => ({
    ...entry, color: palette[index % palette.length], perSecond: bucketed(entry.counts, step),
    total: entry.counts.reduce((sum, count) => sum + count, 0),
    peak: entry.counts.reduce((max, count) => Math.max(max, count), 0),
  }));
  const peak = series.reduce((max, entry) => entry.perSecond.reduce((top, value) => Math.max(top, value), max), 1);
  const scale = niceCeiling(peak);
  const x = (index) => margin.left + (buckets <= 1 ? plotWidth : (index / (buckets - 1)) * plotWidth);
  const y = (value) => margin.top + plotHeight - (value / scale) * plotHeight;
  const children = [];
  for (let tick = 0; tick <= 4; tick += 1) {
    const value = (scale * tick) / 4;
    children.push(svg('line', { class: 'chart-grid', x1: margin.left, x2: width - margin.right, y1: y(value), y2: y(value) }));
    children.push(svg('text', { class: 'chart-axis', x: margin.left - 6, y: y(value) + 4, 'text-anchor': 'end' }, formatRate(value)));
  }
  const end = new Date(data.end).getTime();
  for (let tick = 0; tick <= 4; tick += 1) {
    const index = Math.round(((buckets - 1) * tick) / 4);
    const time = new Date(end - (buckets - 1 - index) * step * 1000);
    const label = formatTime(time.toISOString()).slice(11, step > 1 ? 16 : 19);
    children.push(svg('text', { class: 'chart-axis', x: x(index), y: height - 8, 'text-anchor': tick === 0 ? 'start' : tick === 4 ? 'end' : 'middle' }, label));
  }
  for (const entry of series) {
    const points = entry.perSecond.map((value, index) => `${x(index).toFixed(1)},${y(value).toFixed(1)}`).join(' ');
    children.push(svg('polyline', { class: 'chart-line', points, stroke: entry.color },
      svg('title', {}, `${entry.platform} ${entry.outcome}`)));
  }
  if (series.length === 0) {
    children.push(svg('text', { class: 'chart-axis', x: width / 2, y: height / 2, 'text-anchor': 'middle' },
      'No deliveries in this window.'));
  }
  chart.replaceChildren(...children);
  fill($('rates-table').tBodies[0], series.map((entry) => h('tr', {},
    h('td', {}, svgSwatch(entry.color)),
    h('td', {}, entry.platform),
    h('td', {}, entry.outcome),
    h('td', { class: 'number' }, number(entry.total)),
    h('td', { class: 'number' }, number(entry.peak)),
  )), 5, 'No deliveries in this window.');
  $('rates-caption').textContent = `Deliveries per second, ${step > 1 ? `averaged over ${step} s, ` : ''}` +
    `${formatTime(new Date(end - data.seconds * 1000).toISOString())} to ${formatTime(data.end)}`;
}

function svgSwatch(color) {
  return svg('svg', { width: 28, height: 10, viewBox: '0 0 28 10', 'aria-hidden': 'true' },
    svg('rect', { x: 0, y: 3, width: 28, height: 4, rx: 2, fill: color }));
}

function niceCeiling(value) {
  const power = 10 ** Math.floor(Math.log10(value));
  for (const factor of [1, 2, 2.5, 5, 10]) {
    if (value <= factor * power) return factor * power;
  }
  return 10 * power;
}

function formatRate(value) {
  if (value >= 100 || Number.isInteger(value)) return number(Math.round(value));
  return value.toFixed(1);
}

// MARK: Wiring

document.addEventListener('DOMContentLoaded', () => {
  $('sign-in-form').addEventListener('submit', signIn);
  $('sign-out').addEventListener('click', () => signOut(true));
  $('installations-form').addEventListener('submit', searchInstallations);
  $('installations-previous').addEventListener('click', () => turnInstallationsPage(-1));
  $('installations-next').addEventListener('click', () => turnInstallationsPage(1));
  $('installation-delete').addEventListener('click', askDeleteInstallation);
  $('installation-confirm-keep').addEventListener('click', () => { $('installation-confirm').hidden = true; });
  $('installation-confirm-delete').addEventListener('click', deleteInstallation);
  $('send-form').addEventListener('submit', send);
  $('send-format').addEventListener('change', updateSample);
  $('send-form').addEventListener('input', hideSendConfirm);
  $('send-form').addEventListener('change', hideSendConfirm);
  $('send-confirm-send').addEventListener('click', confirmSend);
  $('send-later').addEventListener('change', updateWhen);
  $('hub-count-form').addEventListener('submit', countAudience);
  $('notification-cancel').addEventListener('click', async () => {
    await cancelNotification(notificationView.id, h('p'));
    await renderNotification().catch((error) => showAlert(describeError(error)));
  });
  $('send-confirm-keep').addEventListener('click', () => { hideSendConfirm(); $('send-submit').focus(); });
  for (const radio of document.querySelectorAll('#send-form input[name=target]')) radio.addEventListener('change', updateTarget);
  $('notifications-newest').addEventListener('click', () => turnNotificationsPage(0));
  $('notifications-older').addEventListener('click', () => turnNotificationsPage(1));
  $('notification-feedback-more').addEventListener('click', () => loadFeedback(false).catch((error) => showAlert(describeError(error))));
  $('rates-form').addEventListener('submit', (event) => event.preventDefault());
  $('rates-window').addEventListener('change', () => {
    if (session.key && !$('page-rates').hidden) watchRates().catch((error) => showAlert(describeError(error)));
  });
  window.addEventListener('hashchange', route);
  route();
});
