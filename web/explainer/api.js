// The page's only way to the server: JSON in, JSON out; server errors (OpenAI-style bodies) become
// exceptions carrying the server's message, shown in the page's alert line.
export async function postJson(path, body) {
  return readJson(await fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) }));
}

export async function getJson(path) {
  return readJson(await fetch(path));
}

async function readJson(response) {
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const message = body && body.error ? body.error.message : `HTTP ${response.status}`;
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return body;
}

export function showError(error) {
  const line = document.getElementById('error');
  if (!error) {
    line.hidden = true;
    line.textContent = '';
    return;
  }
  line.hidden = false;
  line.textContent = `Error: ${error.message}`;
}

// Runs `task` with `button` disabled; errors go to the alert line.
export async function whileBusy(button, task) {
  button.disabled = true;
  try {
    showError(null);
    return await task();
  } catch (error) {
    showError(error);
    return null;
  } finally {
    button.disabled = false;
  }
}
