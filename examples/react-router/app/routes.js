import { index, route } from '@react-router/dev/routes'

export default [index('routes/catalogue.jsx'), route('products/:id', 'routes/product.jsx'), route('orders', 'routes/orders.jsx')]
