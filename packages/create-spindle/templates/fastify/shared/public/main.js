// Runs in the browser: asks the API which worker thread answered.
const answer = await fetch('/api/hello').then((response) => response.json())
document.getElementById('greeting').textContent = `${answer.hello}, from worker thread ${answer.thread}`
