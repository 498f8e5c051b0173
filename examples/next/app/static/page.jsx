export default function Static () {
  return (
    <>
      <h1 id="static-title">A static page</h1>
      <p>Rendered once at build time and served from the build output.</p>
    </>
  )
}
